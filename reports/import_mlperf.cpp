#include "reports/import_mlperf.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/statistics.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

constexpr std::string_view kTag = ":::MLLOG";

struct Run {
  std::string source;
  std::string benchmark;
  std::map<std::string, json> submission;  // submission_* and global_batch_size values
  std::optional<double> start_ms, stop_ms;
  std::string stop_status;
  std::vector<double> throughput;  // samples/s, every value logged
  std::optional<double> eval_accuracy;
  std::optional<double> train_samples;
  std::optional<double> nodes, accelerators_per_node;
};

Run parse_log(const MlperfLog& log) {
  Run run;
  run.source = log.source;
  std::istringstream in(log.text);
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto at = line.find(kTag);
    if (at == std::string::npos) continue;
    json e;
    try {
      e = json::parse(line.substr(at + kTag.size()));
    } catch (const json::exception&) {  // parse_error, or out_of_range for 1e5000
      throw input_error(fmt::format("{}:{}: malformed :::MLLOG line (expected a JSON object after the tag)",
                                    log.source, lineno));
    }
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string())
      throw input_error(fmt::format("{}:{}: :::MLLOG event without a \"key\"", log.source, lineno));
    const std::string key = e["key"].get<std::string>();
    const json value = e.value("value", json());
    const json meta = e.value("metadata", json::object());
    const auto time_ms = [&]() -> double {
      if (!e.contains("time_ms") || !e["time_ms"].is_number())
        throw input_error(
            fmt::format("{}:{}: {} event without a numeric \"time_ms\"", log.source, lineno, key));
      return e["time_ms"].get<double>();
    };
    if (key == "run_start") {
      if (!run.start_ms) run.start_ms = time_ms();
    } else if (key == "run_stop") {
      run.stop_ms = time_ms();
      run.stop_status = meta.is_object() ? meta.value("status", "") : "";
    } else if (key == "submission_benchmark" && value.is_string()) {
      run.benchmark = value.get<std::string>();
      run.submission[key] = value;
    } else if (key.starts_with("submission_") || key == "global_batch_size") {
      run.submission[key] = value;
    } else if (key == "throughput" && value.is_number()) {
      run.throughput.push_back(value.get<double>());
    } else if (key == "tracked_stats" && value.is_object() && value.contains("throughput") &&
               value["throughput"].is_number()) {
      run.throughput.push_back(value["throughput"].get<double>());
    } else if (key == "eval_accuracy" && value.is_number()) {
      run.eval_accuracy = value.get<double>();
    } else if (key == "train_samples" && value.is_number()) {
      run.train_samples = value.get<double>();
    } else if (key == "number_of_nodes" && value.is_number()) {
      run.nodes = value.get<double>();
    } else if (key == "accelerators_per_node" && value.is_number()) {
      run.accelerators_per_node = value.get<double>();
    }
  }
  if (!run.start_ms && !run.stop_ms && run.submission.empty())
    throw input_error(log.source + ": no :::MLLOG lines (expected an MLPerf Training log)");
  if (run.benchmark.empty()) run.benchmark = "unknown";
  return run;
}

std::string stem(const std::string& source) {
  std::string s = std::filesystem::path(source).stem().string();
  return s.empty() ? source : s;
}

}  // namespace

double olympic_mean(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const std::size_t drop = values.size() >= 3 ? 1 : 0;
  const double sum =
      std::accumulate(values.begin() + static_cast<long>(drop), values.end() - static_cast<long>(drop), 0.0);
  return sum / static_cast<double>(values.size() - 2 * drop);
}

Report import_mlperf(const std::vector<MlperfLog>& logs) {
  std::vector<Run> runs;
  for (const auto& log : logs) runs.push_back(parse_log(log));

  Report rep;
  int world = 1;
  if (runs[0].nodes && runs[0].accelerators_per_node)
    world = static_cast<int>(*runs[0].nodes * *runs[0].accelerators_per_node);
  rep.run = {{"world_size", std::max(world, 1)}, {"hosts", json::array()}, {"backend", "none"}};
  json summary_runs = json::array();
  std::map<std::string, std::vector<double>> ttt_by_benchmark;  // successful runs
  std::map<std::string, std::size_t> index_by_benchmark;
  std::vector<std::string> order;

  for (const auto& run : runs) {
    Result r;
    r.benchmark = "mlperf";
    const std::size_t n = ++index_by_benchmark[run.benchmark];
    if (n == 1) order.push_back(run.benchmark);
    r.name = fmt::format("{}/run{}", run.benchmark, n);
    r.params = {{"source", run.source}, {"log", stem(run.source)}};
    for (const auto& [k, v] : run.submission) r.params[k] = v;
    if (run.train_samples) r.params["train_samples"] = *run.train_samples;
    if (run.start_ms && run.stop_ms) {
      const double minutes = (*run.stop_ms - *run.start_ms) / 60000.0;
      r.set_metric("time_to_train_min", {minutes, "min", Better::lower, std::nullopt});
      if (run.stop_status == "success") ttt_by_benchmark[run.benchmark].push_back(minutes);
    }
    if (!run.throughput.empty()) {
      // The median of the logged values: the start-up and tail steps do not move it.
      const auto s = summarize(run.throughput);
      Metric m{s.median, "samples/s", Better::higher, std::nullopt};
      if (s.n > 1) m.stats = s;
      r.set_metric("throughput_samples_per_s", m);
    }
    // The quality metric's direction differs per benchmark (accuracy up, loss down): shown, not gated.
    if (run.eval_accuracy)
      r.set_metric("eval_accuracy", {*run.eval_accuracy, "score", Better::none, std::nullopt});
    if (!run.start_ms)
      r.fail("no run_start event");
    else if (!run.stop_ms)
      r.fail("no run_stop event (the run did not finish)");
    else if (run.stop_status != "success")
      r.fail(fmt::format("run_stop status \"{}\"", run.stop_status.empty() ? "missing" : run.stop_status));
    summary_runs.push_back(
        {{"source", run.source}, {"benchmark", run.benchmark}, {"status", run.stop_status}});
    rep.results.push_back(std::move(r));
  }
  for (const auto& bench : order) {
    const auto it = ttt_by_benchmark.find(bench);
    if (it == ttt_by_benchmark.end() || index_by_benchmark[bench] < 2) continue;
    const auto& v = it->second;
    Result r;
    r.benchmark = "mlperf";
    r.name = bench + "/score";
    r.params = {
        {"runs", index_by_benchmark[bench]},
        {"successful_runs", v.size()},
        {"method", v.size() >= 3 ? "mean after dropping the fastest and the slowest run (MLPerf Training)"
                                 : "mean (fewer than 3 successful runs)"}};
    Metric m{olympic_mean(v), "min", Better::lower, std::nullopt};
    if (v.size() > 1) m.stats = summarize(v);
    r.set_metric("time_to_train_min", m);
    rep.results.push_back(std::move(r));
  }
  rep.summary = {
      {"import", {{"format", "MLPerf Training :::MLLOG"}, {"logs", logs.size()}, {"runs", summary_runs}}}};
  if (!runs.empty()) {
    json meta = json::object();
    for (const auto& [k, v] : runs[0].submission) meta[k] = v;
    rep.summary["mlperf"] = meta;
  }
  return rep;
}

}  // namespace fb::reports
