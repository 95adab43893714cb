#include "reports/report.hpp"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::reports {

std::string_view to_string(Better b) {
  switch (b) {
    case Better::higher:
      return "higher";
    case Better::lower:
      return "lower";
    case Better::none:
      return "none";
  }
  return "none";
}

std::string_view to_string(Status s) {
  switch (s) {
    case Status::ok:
      return "ok";
    case Status::failed:
      return "failed";
    case Status::skipped:
      return "skipped";
  }
  return "failed";
}

Better parse_better(std::string_view text) {
  if (text == "higher") return Better::higher;
  if (text == "lower") return Better::lower;
  if (text == "none") return Better::none;
  throw input_error("expected \"higher\", \"lower\" or \"none\", got \"" + std::string(text) + "\"");
}

Status parse_status(std::string_view text) {
  if (text == "ok") return Status::ok;
  if (text == "failed") return Status::failed;
  if (text == "skipped") return Status::skipped;
  throw input_error("expected \"ok\", \"failed\" or \"skipped\", got \"" + std::string(text) + "\"");
}

Metric& Result::set_metric(const std::string& metric_name, Metric m) {
  for (auto& [k, v] : metrics)
    if (k == metric_name) return v = std::move(m);
  metrics.emplace_back(metric_name, std::move(m));
  return metrics.back().second;
}

const Metric* Result::metric(std::string_view metric_name) const {
  for (const auto& [k, v] : metrics)
    if (k == metric_name) return &v;
  return nullptr;
}

void Result::set_per_rank(const std::string& key, std::vector<double> values) {
  for (auto& [k, v] : per_rank)
    if (k == key) {
      v = std::move(values);
      return;
    }
  per_rank.emplace_back(key, std::move(values));
}

bool Report::any_failed() const {
  return std::any_of(results.begin(), results.end(),
                     [](const Result& r) { return r.status == Status::failed; });
}

Metric metric_from_samples(std::span<const double> samples, std::string unit, Better better) {
  Metric m;
  const SampleStats s = summarize(samples);
  m.value = s.median;
  m.unit = std::move(unit);
  m.better = better;
  if (s.n > 0) m.stats = s;
  return m;
}

Metric scaled_metric(const Metric& source, double factor, std::string unit, Better better) {
  Metric m;
  m.value = source.value * factor;
  m.unit = std::move(unit);
  m.better = better;
  if (source.stats) {
    auto s = *source.stats;
    for (double* x : {&s.min, &s.median, &s.max, &s.mean, &s.p99, &s.stddev}) *x *= factor;
    m.stats = s;
  }
  return m;
}

void check_unique_results(const Report& report, const std::string& source) {
  std::unordered_map<std::string, std::size_t> index;
  index.reserve(report.results.size());
  for (std::size_t i = 0; i < report.results.size(); ++i) {
    const auto& r = report.results[i];
    if (const auto [it, fresh] = index.emplace(r.benchmark + '\x1f' + r.name, i); !fresh)
      throw input_error(
          fmt::format("{}: $.results[{}]: result {}/{} is also $.results[{}]: results are told apart by "
                      "benchmark + name, "
                      "which must be unique",
                      source, i, r.benchmark, r.name, it->second));
  }
}

}  // namespace fb::reports
