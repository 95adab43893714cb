#pragma once
// What the report printers share: run labels and facts, benchmark and metric order, cell formatting and the
// multi-run (trend) table layout. Pure functions over NamedReport.
#include <optional>
#include <string>
#include <vector>

#include "reports/report_printers.hpp"

namespace fb::reports {

// Short label for report i: its file name without directory and ".json"; "#2 name" when several reports
// share a name.
std::string run_label(const std::vector<NamedReport>& reports, std::size_t i);

struct RunFacts {
  std::string id, command, backend, started_at, finished_at, version, device, peak_source, hosts;
  std::optional<int> world_size;
  bool reference = false;
  std::string title;  // references: summary.title
};
RunFacts run_facts(const Report& report);

// Benchmarks in order of first appearance over all reports.
std::vector<std::string> benchmark_order(const std::vector<NamedReport>& reports);
// Metric names of one benchmark in order of first appearance over all reports.
std::vector<std::string> metric_columns(const std::vector<NamedReport>& reports,
                                        const std::string& benchmark);

// A metric's column heading with its unit: "busbw_gbps (GB/s)", "mfu (fraction)", "loss" (unit "value").
// metric_unit: the first unit seen for that metric of `benchmark`.
std::string metric_heading(const std::string& name, const std::string& unit);
std::string metric_unit(const std::vector<NamedReport>& reports, const std::string& benchmark,
                        const std::string& name);

// A value as a cell: "482.3", "null" for a non-finite value.
std::string value_cell(const Metric& m);

// The rows of a trend table for one benchmark: each (result, metric) seen in any report, with each report's
// value (absent where the report lacks it).
struct TrendRow {
  std::string result;
  std::string metric;
  std::string unit;
  Better better = Better::none;
  std::vector<std::optional<double>> values;  // one per report
};
std::vector<TrendRow> trend_rows(const std::vector<NamedReport>& reports, const std::string& benchmark);

// Results of one benchmark in one report.
std::vector<const Result*> results_of(const Report& report, const std::string& benchmark);

}  // namespace fb::reports
