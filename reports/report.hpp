#pragma once
// The report model (schema factorybench.report/v1): plain data that every workload produces and every
// printer reads. Measuring never formats; printers never measure.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/statistics.hpp"

namespace fb::reports {

inline constexpr std::string_view kSchemaV1 = "factorybench.report/v1";

enum class Better { higher, lower, none };
enum class Status { ok, failed, skipped };

std::string_view to_string(Better b);
std::string_view to_string(Status s);
Better parse_better(std::string_view text);  // throws input Error
Status parse_status(std::string_view text);  // throws input Error

struct Metric {
  double value = 0;
  std::string unit;  // "us", "GB/s", "TFLOP/s", "fraction", "count", "s", "%"
  Better better = Better::none;
  std::optional<SampleStats> stats;  // spread of the samples behind `value`, when there were several
};

struct Result {
  std::string benchmark;  // "gemm", "collective", "train", "resilience", "simulate", "info"
  std::string name;       // identity within the benchmark: "allreduce/fp32/1048576"
  nlohmann::json params = nlohmann::json::object();
  std::vector<std::pair<std::string, Metric>> metrics;                // in insertion order
  std::vector<std::pair<std::string, std::vector<double>>> per_rank;  // index = world rank
  Status status = Status::ok;
  std::optional<std::string> error;
  nlohmann::json extra = nlohmann::json::object();  // benchmark-specific detail (breakdowns, notes)

  // Adds or replaces a metric.
  Metric& set_metric(const std::string& name, Metric metric);
  const Metric* metric(std::string_view name) const;
  void set_per_rank(const std::string& name, std::vector<double> values);
  void fail(std::string message) {
    status = Status::failed;
    error = std::move(message);
  }
};

struct Report {
  std::string schema{kSchemaV1};
  nlohmann::json tool = nlohmann::json::object();  // name, version, git_commit
  nlohmann::json run =
      nlohmann::json::object();  // id, command, started_at, finished_at, world_size, hosts, backend
  nlohmann::json system = nlohmann::json::object();  // devices, versions, cpu, peak_tflops
  std::vector<Result> results;
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json summary = nlohmann::json::object();

  bool any_failed() const;
};

// Results are told apart by benchmark + name (compare matches them so, a trend lines them up so, Prometheus
// labels them so): one given twice throws an input Error naming `source`, the JSON paths of both and the
// name.
void check_unique_results(const Report& report, const std::string& source);

// Metric from samples: value = median, stats attached.
Metric metric_from_samples(std::span<const double> samples, std::string unit, Better better);
// A metric that is `source` times a positive constant (mfu = tflops / peak, busbw = algbw x the bus
// factor): value and stats scaled alike, so compare sees the derived figure as noisy as its source.
Metric scaled_metric(const Metric& source, double factor, std::string unit, Better better);

}  // namespace fb::reports
