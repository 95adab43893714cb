// Reports in the Prometheus text exposition format (version 0.0.4), for node_exporter's textfile collector:
//
//   # HELP factorybench_busbw_gbps factorybench busbw_gbps (GB/s, higher is better)
//   # TYPE factorybench_busbw_gbps gauge
//   factorybench_busbw_gbps{benchmark="collective",result="allreduce/bf16/1048576",op="allreduce",dtype="bf16",size="1048576"}
//   123.4
//
// One family per metric name (every sample of a family together, HELP and TYPE once, before its samples);
// labels: benchmark, result, a fixed set of identifying params (op, dtype, size, m, n, k, model, tp, dp, ep,
// pp), and `run` when several reports are rendered. Per-rank values become factorybench_rank_<name>{…,rank}
// and each result's status factorybench_result_ok (1 ok, 0 failed; skipped results are left out).
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>

#include "reports/report_printers.hpp"
#include "reports/report_view.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

// [a-zA-Z_:][a-zA-Z0-9_:]*
std::string metric_name(const std::string& s) {
  std::string out;
  for (const char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ? ch : '_';
  return out;
}

std::string label_value(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '"')
      out += "\\\"";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string help_text(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '\\')
      out += "\\\\";
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

std::string sample_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string param_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return {};
}

struct Family {
  std::string owner;  // what the family holds: "status", "metric NAME" or "rank NAME"
  std::string help;
  std::vector<std::string> samples;
  std::unordered_set<std::string> label_sets;  // a series appears once
};

}  // namespace

std::string render_prometheus(const std::vector<NamedReport>& reports) {
  // (param key, label name): identifying params only, so label sets stay small and stable.
  static const std::pair<const char*, const char*> kParamLabels[] = {
      {"op", "op"},       {"dtype", "dtype"}, {"bytes", "size"}, {"m", "m"},   {"n", "n"},  {"k", "k"},
      {"model", "model"}, {"tp", "tp"},       {"dp", "dp"},      {"ep", "ep"}, {"pp", "pp"}};
  std::vector<std::string> order;
  std::map<std::string, Family> families;
  // A family belongs to one source: a metric named "result_ok", a metric "rank_tflops" beside a per-rank
  // "tflops", or per-rank "time.us" beside "time_us" would otherwise share a name and lose or mix series.
  // The later source takes the name with "_2" (then "_3", ...), its HELP naming what it holds.
  const auto add = [&](const std::string& base, const std::string& owner, const std::string& help,
                       const std::string& labels, double v) {
    std::string name = base;
    for (int n = 2;; ++n) {
      auto [it, fresh] = families.try_emplace(name);
      if (fresh) {
        order.push_back(name);
        it->second.owner = owner;
        it->second.help = help;
      }
      if (it->second.owner == owner) break;
      name = fmt::format("{}_{}", base, n);
    }
    Family& f = families.at(name);
    if (!f.label_sets.insert(labels).second) return;  // duplicate series: keep the first
    f.samples.push_back(fmt::format("{}{{{}}} {}", name, labels, sample_value(v)));
  };
  // The status families keep their documented names whatever the metrics are called (a metric named
  // "result_skipped" takes "_2", not the status): registered first, written only when they hold samples.
  for (const auto& [name, owner, help] :
       {std::tuple<const char*, const char*, const char*>{"factorybench_result_ok", "status",
                                                          "factorybench result status (1 ok, 0 failed)"},
        {"factorybench_result_skipped", "skipped",
         "factorybench result skipped (not run, or not applicable; it has no measurements)"}}) {
    order.push_back(name);
    families[name] = Family{owner, help, {}, {}};
  }
  for (std::size_t i = 0; i < reports.size(); ++i) {
    for (const auto& r : reports[i].report.results) {
      std::string labels =
          fmt::format("benchmark=\"{}\",result=\"{}\"", label_value(r.benchmark), label_value(r.name));
      for (const auto& [key, label] : kParamLabels)
        if (r.params.is_object() && r.params.contains(key))
          if (const std::string v = param_text(r.params[key]); !v.empty())
            labels += fmt::format(",{}=\"{}\"", label, label_value(v));
      if (reports.size() > 1) labels += fmt::format(",run=\"{}\"", label_value(run_label(reports, i)));
      // A skipped result (not run, or not applicable here) is neither ok nor failed, and its figures are not
      // measurements: one sample says it was skipped, so an alert can see it, and nothing else.
      if (r.status == Status::skipped) {
        add("factorybench_result_skipped", "skipped",
            "factorybench result skipped (not run, or not applicable; it has no measurements)", labels, 1);
        continue;
      }
      add("factorybench_result_ok", "status", "factorybench result status (1 ok, 0 failed)", labels,
          r.status == Status::ok ? 1 : 0);
      // A family holds one unit: a result giving the same metric in another unit gets a family of its own.
      for (const auto& [name, m] : r.metrics)
        add("factorybench_" + metric_name(name), "metric " + name + " in " + m.unit,
            fmt::format("factorybench {} ({}, {} is better)", name, m.unit.empty() ? "no unit" : m.unit,
                        m.better == Better::none ? "neither" : std::string(to_string(m.better))),
            labels, m.value);
      // Labelled by world rank, so a --split group 1's first rank is not another rank 0.
      for (const auto& [name, values] : r.per_rank) {
        const std::size_t first_rank = first_world_rank(reports[i].report, r, values.size());
        for (std::size_t rank = 0; rank < values.size(); ++rank)
          add("factorybench_rank_" + metric_name(name), "rank " + name,
              fmt::format("factorybench per-rank {}", name),
              labels + fmt::format(",rank=\"{}\"", first_rank + rank), values[rank]);
      }
    }
  }
  std::string out;
  for (const auto& name : order) {
    const Family& f = families.at(name);
    if (f.samples.empty()) continue;
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help_text(f.help), name);
    for (const auto& s : f.samples) out += s + "\n";
  }
  return out;
}

}  // namespace fb::reports
