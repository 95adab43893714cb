#include "reports/report_view.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "reports/compare.hpp"
#include "reports/headline.hpp"
#include "reports/json_fields.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

std::string label_stem(const std::string& source) {
  std::string name = std::filesystem::path(source).filename().string();
  if (name.size() > 5 && name.ends_with(".json")) name.resize(name.size() - 5);
  return name.empty() ? source : name;
}

}  // namespace

std::string run_label(const std::vector<NamedReport>& reports, std::size_t i) {
  const std::string mine = label_stem(reports[i].source);
  std::size_t same = 0;
  for (const auto& r : reports) same += label_stem(r.source) == mine ? 1 : 0;
  // "#N " is the numbering's: a name that begins with '#' is numbered too, so that no label repeats (a file
  // named "#2 a.json" beside two a.json gave "#2 a" twice, and the Prometheus export dropped one report).
  return same > 1 || mine.starts_with('#') ? fmt::format("#{} {}", i + 1, mine) : mine;
}

DistinctLabels distinct_labels(const std::vector<std::string>& names) {
  DistinctLabels out{names, ""};
  if (names.size() < 2) return out;
  std::vector<std::vector<std::string>> parts;
  for (const auto& n : names) {
    parts.emplace_back();
    std::size_t from = 0;
    for (std::size_t at; (at = n.find('/', from)) != std::string::npos; from = at + 1)
      parts.back().push_back(n.substr(from, at - from));
    parts.back().push_back(n.substr(from));
    if (parts.back().size() != parts.front().size()) return out;
  }
  std::vector<bool> shared(parts.front().size(), true);
  for (std::size_t i = 0; i < shared.size(); ++i)
    for (const auto& p : parts) shared[i] = shared[i] && p[i] == parts.front()[i];
  if (std::all_of(shared.begin(), shared.end(), [](bool b) { return b; })) return out;
  for (std::size_t k = 0; k < names.size(); ++k) {
    std::string label;
    for (std::size_t i = 0; i < shared.size(); ++i)
      if (!shared[i]) label += (label.empty() ? "" : "/") + parts[k][i];
    out.labels[k] = label;
  }
  for (std::size_t i = 0; i < shared.size(); ++i) {
    const std::string part = shared[i] ? parts.front()[i] : "*";
    if (part == "*" && out.shared.ends_with("*")) continue;  // one "*" for a run of differing segments
    out.shared += (i == 0 ? "" : "/") + part;
  }
  return out;
}

std::size_t first_world_rank(const Report& report, const Result& r, std::size_t count) {
  if (!r.params.is_object()) return 0;
  const auto first = r.params.find("first_rank");
  if (first == r.params.end() || !first->is_number_integer() || first->get<std::int64_t>() < 0) return 0;
  const auto rank = first->get<std::int64_t>();
  if (report.run.is_object())
    if (const auto world = report.run.find("world_size");
        world != report.run.end() && world->is_number_integer() &&
        rank + static_cast<std::int64_t>(count) > world->get<std::int64_t>())
      return 0;
  return static_cast<std::size_t>(rank);
}

bool is_dry_run(const Result& r) {
  return r.params.is_object() && r.params.contains("dry_run") && r.params["dry_run"].is_boolean() &&
         r.params["dry_run"].get<bool>();
}

RunFacts run_facts(const Report& report) {
  RunFacts f;
  const json& run = report.run;
  f.id = field_text(run, "id");
  f.command = field_text(run, "command");
  f.backend = field_text(run, "backend");
  f.started_at = field_text(run, "started_at");
  f.finished_at = field_text(run, "finished_at");
  if (run.is_object() && run.contains("world_size") && run["world_size"].is_number_integer())
    f.world_size = run["world_size"].get<int>();
  if (run.is_object() && run.contains("hosts") && run["hosts"].is_array()) {
    for (const auto& h : run["hosts"])
      if (h.is_string()) f.hosts += (f.hosts.empty() ? "" : ", ") + h.get<std::string>();
  }
  f.version = field_text(report.tool, "version");
  const json& sys = report.system;
  if (sys.is_object() && sys.contains("ranks") && sys["ranks"].is_array() && !sys["ranks"].empty() &&
      sys["ranks"][0].is_object() && sys["ranks"][0].contains("device"))
    f.device = field_text(sys["ranks"][0]["device"], "name");
  if (f.device.empty()) f.device = field_text(sys, "description");
  if (sys.is_object() && sys.contains("peak_tflops") && sys["peak_tflops"].is_object())
    f.peak_source = field_text(sys["peak_tflops"], "source");
  if (field_text(report.summary, "kind") == "reference") {
    f.reference = true;
    f.title = field_text(report.summary, "title");
  }
  return f;
}

std::vector<std::string> benchmark_order(const std::vector<NamedReport>& reports) {
  std::vector<std::string> order;
  std::unordered_set<std::string> seen;
  for (const auto& nr : reports)
    for (const auto& r : nr.report.results)
      if (seen.insert(r.benchmark).second) order.push_back(r.benchmark);
  return order;
}

std::vector<std::string> metric_columns(const std::vector<NamedReport>& reports,
                                        const std::string& benchmark) {
  std::vector<std::string> order;
  std::unordered_set<std::string> seen;
  for (const auto& nr : reports)
    for (const auto& r : nr.report.results)
      if (r.benchmark == benchmark)
        for (const auto& [name, m] : r.metrics)
          if (seen.insert(name).second) order.push_back(name);
  // The headline's figures lead, in its order (a training table opened on flops_per_step, its MFU off the
  // screen to the right); the others follow as they came.
  std::vector<std::string> out;
  for (const auto& name : headline_metrics(benchmark))
    if (seen.count(name)) out.push_back(name);
  for (auto& name : order)
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  return out;
}

std::string metric_heading(const std::string& name, const std::string& unit) {
  return unit.empty() || unit == "value" ? name : name + " (" + unit + ")";  // "value": no unit to show
}

std::string metric_unit(const std::vector<NamedReport>& reports, const std::string& benchmark,
                        const std::string& name) {
  std::optional<std::string> unit;
  for (const auto& nr : reports)
    for (const auto& r : nr.report.results)
      if (r.benchmark == benchmark)
        if (const Metric* m = r.metric(name)) {
          if (unit && *unit != m->unit) return {};  // mixed: no unit in the heading, one in each cell
          unit = m->unit;
        }
  return unit.value_or("");
}

std::string value_cell(const Metric& m, const std::string& column_unit) {
  const bool own = m.unit != column_unit && !m.unit.empty() && m.unit != "value";
  return own ? format_value(m.value) + " " + m.unit : format_value(m.value);
}

std::vector<const Result*> results_of(const Report& report, const std::string& benchmark) {
  std::vector<const Result*> out;
  for (const auto& r : report.results)
    if (r.benchmark == benchmark) out.push_back(&r);
  return out;
}

std::vector<TrendRow> trend_rows(const std::vector<NamedReport>& reports, const std::string& benchmark) {
  // Each result's status in each report, and whether it has a metric anywhere.
  std::unordered_map<std::string, std::vector<std::optional<Status>>> status;
  std::unordered_set<std::string> measured;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (const auto& r : reports[i].report.results) {
      if (r.benchmark != benchmark) continue;
      auto& s = status.try_emplace(r.name, reports.size()).first->second;
      s[i] = r.status;
      if (!r.metrics.empty()) measured.insert(r.name);
    }
  std::vector<TrendRow> rows;
  std::unordered_map<std::string, std::size_t> index;
  const auto row_for = [&](const Result& r, const std::string& metric, const Metric* m) -> TrendRow& {
    const std::string key = r.name + '\x1f' + metric + '\x1f' + (m ? m->unit : std::string());
    auto [it, fresh] = index.emplace(key, rows.size());
    if (fresh) {
      TrendRow row;
      row.result = r.name;
      row.metric = metric;
      if (m) {
        row.unit = m->unit;
        row.better = m->better;
      }
      row.values.assign(reports.size(), std::nullopt);
      row.status = status.at(r.name);
      rows.push_back(std::move(row));
    }
    return rows[it->second];
  };
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (const auto& r : reports[i].report.results) {
      if (r.benchmark != benchmark) continue;
      if (!measured.count(r.name)) row_for(r, "", nullptr);
      for (const auto& [name, m] : r.metrics) row_for(r, name, &m).values[i] = m.value;
    }
  return rows;
}

std::string trend_cell(const TrendRow& row, std::size_t report) {
  const auto& v = row.values.at(report);
  const auto& s = row.status.at(report);
  const bool ok = !s || *s == Status::ok;
  if (v) return ok ? format_value(*v) : fmt::format("{} ({})", format_value(*v), to_string(*s));
  if (s && (row.metric.empty() || !ok)) return std::string(to_string(*s));
  return "–";
}

std::optional<double> trend_change(const TrendRow& row) {
  const auto& a = row.values.front();
  const auto& b = row.values.back();
  const auto ok = [](const std::optional<Status>& s) { return s && *s == Status::ok; };
  if (!a || !b || !std::isfinite(*a) || !std::isfinite(*b) || *a == 0) return std::nullopt;
  if (!ok(row.status.front()) || !ok(row.status.back())) return std::nullopt;
  return (*b - *a) / std::fabs(*a);
}

std::string trend_metric_heading(const TrendRow& row) {
  return row.metric.empty() ? "status" : metric_heading(row.metric, row.unit);
}

std::vector<TrendProblem> trend_problems(const std::vector<NamedReport>& reports,
                                         const std::string& benchmark) {
  std::vector<TrendProblem> out;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (const auto& r : reports[i].report.results)
      if (r.benchmark == benchmark && r.status != Status::ok)
        out.push_back({i, r.name, r.status, r.error.value_or("")});
  return out;
}

}  // namespace fb::reports
