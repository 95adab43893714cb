#pragma once
// What the report printers share: run labels and facts, benchmark and metric order, cell formatting and the
// multi-run (trend) table layout. Pure functions over NamedReport.
#include <optional>
#include <string>
#include <vector>

#include "reports/report_printers.hpp"

namespace fb::reports {

// Short label for report i: its file name without directory and ".json"; "#2 name" (its place among the
// reports) when several reports share a name, or the name begins with '#'. No two labels repeat.
std::string run_label(const std::vector<NamedReport>& reports, std::size_t i);

struct RunFacts {
  std::string id, command, backend, started_at, finished_at, version, device, peak_source, hosts;
  std::optional<int> world_size;
  bool reference = false;
  std::string title;  // references: summary.title
};
RunFacts run_facts(const Report& report);

// Labels that tell names apart where a chart cuts its labels short: the '/'-segments that every name has at
// the same position are left out (a grad-accum sweep of one model and layout reads "seq128-mb1-ga1", "…-ga2";
// `--policy compare`'s jobs "policy-none", "policy-drain"), and `shared` is the name with what differs as "*"
// ("tiny-dense/ranks2/*"). Names of different depths, one name, or names alike stay whole (`shared` empty).
struct DistinctLabels {
  std::vector<std::string> labels;
  std::string shared;
};
DistinctLabels distinct_labels(const std::vector<std::string>& names);

// The world rank of element 0 of a result's per-rank arrays: a --split group's hold its own ranks, from
// params.first_rank; 0 otherwise, and for a hand-edited first rank that is not a non-negative integer or
// whose `count` ranks would pass the report's run.world_size (when it gives one).
std::size_t first_world_rank(const Report& report, const Result& r, std::size_t count);

// A plan that measured nothing (train --dry-run: params.dry_run true): printers say so beside its status.
bool is_dry_run(const Result& r);

// Benchmarks in order of first appearance over all reports.
std::vector<std::string> benchmark_order(const std::vector<NamedReport>& reports);
// Metric names of one benchmark: its headline's figures first (reports/headline.hpp), then the others in
// order of first appearance over all reports.
std::vector<std::string> metric_columns(const std::vector<NamedReport>& reports,
                                        const std::string& benchmark);

// A metric's column heading with its unit: "busbw_gbps (GB/s)", "mfu (fraction)", "loss" (unit "value").
// metric_unit: the unit every result of `benchmark` gives that metric; empty when they differ (a hand-made
// or imported report), and then each cell carries its own (value_cell).
std::string metric_heading(const std::string& name, const std::string& unit);
std::string metric_unit(const std::vector<NamedReport>& reports, const std::string& benchmark,
                        const std::string& name);

// A value as a cell: "482.3", "null" for a non-finite value; "482.3 GB/s" when the column's unit
// (metric_unit) is not the metric's own.
std::string value_cell(const Metric& m, const std::string& column_unit);

// The rows of a trend table for one benchmark: each (result, metric, unit) seen in any report, with each
// report's value (absent where the report lacks it) and the result's status there (absent where the report
// lacks the result). A result with no metric in any report (one that failed before measuring) gets one row
// with an empty metric, so that no result drops out of the table. A metric given in other units by another
// report is another row: values of different units are never set side by side.
struct TrendRow {
  std::string result;
  std::string metric;  // empty: the result's status row
  std::string unit;
  Better better = Better::none;
  std::vector<std::optional<double>> values;  // one per report
  std::vector<std::optional<Status>> status;  // one per report
};
std::vector<TrendRow> trend_rows(const std::vector<NamedReport>& reports, const std::string& benchmark);

// One cell of a trend row: "482.3"; "482.3 (failed)" when that report's result failed or was skipped;
// "failed" / "skipped" without a value; "–" where the report lacks it.
std::string trend_cell(const TrendRow& row, std::size_t report);
// The change from the first report to the last, as a fraction; only when both values are finite and both
// results ok (a failed run's figure is not a trend).
std::optional<double> trend_change(const TrendRow& row);
// The metric column of a trend row: "busbw_gbps (GB/s)", or "status" for a result's status row.
std::string trend_metric_heading(const TrendRow& row);

// The results of one benchmark that did not pass, in report order, with their errors: listed under a trend
// table, which has no room for them.
struct TrendProblem {
  std::size_t report = 0;
  std::string result;
  Status status = Status::failed;
  std::string error;  // empty when the result gives none
};
std::vector<TrendProblem> trend_problems(const std::vector<NamedReport>& reports,
                                         const std::string& benchmark);

// Results of one benchmark in one report.
std::vector<const Result*> results_of(const Report& report, const std::string& benchmark);

}  // namespace fb::reports
