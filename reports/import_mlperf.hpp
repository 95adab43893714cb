#pragma once
// MLPerf Training logs (`:::MLLOG {json}` lines, mlperf_logging) as a factorybench report. Each log is one
// run: time to train = run_stop.time_ms − run_start.time_ms (minutes), throughput where the log carries it
// (key "throughput", or "tracked_stats" with value.throughput; samples/s), the last eval_accuracy, and the
// submission metadata (submission_benchmark, _org, _division, _status, _platform, global_batch_size).
// A run whose run_stop status is not "success" (or that has no run_stop), whose log ends in the middle of an
// event (cut short), or that logged a figure as NaN/Infinity (mllog's diverged value) is a failed result; a
// run_stop that does not follow run_start, or a time that is not a finite number, is an input error. When
// several ranks log the start and stop, the time runs from the last run_start before the first run_stop to
// it, as MLCommons' summarizer reads a log. "Success" is the logged status: MLCommons' compliance checker
// (required keys, convergence to the benchmark's target) is not run.
// With several runs of one benchmark, result BENCHMARK/score holds the MLPerf score as MLCommons' result
// summarizer computes it (mlperf_olympic_score), times the scaling factor of the logs' folder when it has a
// scaling.json (the review committee's factor; the summarizer's _get_scaling_factor). The system comes from
// the `:::SYSJSON` line when the log has one (system_name, accelerators), else from submission_platform; what
// a log does not say is unknown.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

// A benchmark folder's scaling.json ({"scaling_factor": X}), which the review committee adds when a score
// is to be scaled: the summarizer multiplies the olympic mean (not each run) by X.
struct MlperfScaling {
  std::string source;  // the scaling.json file, for errors and params
  double factor = 1;
};

// Parses a scaling.json; input Error naming the file when it is not an object with a positive finite
// "scaling_factor". Pure.
MlperfScaling parse_mlperf_scaling(const std::string& source, const std::string& text);

struct MlperfLog {
  std::string source;  // file name, for errors and params
  std::string text;
  std::optional<MlperfScaling> scaling = std::nullopt;  // the scaling.json beside the log, if any
};

// Lines without ":::MLLOG" are ignored (logs interleave with other output); a ":::MLLOG" line whose JSON
// does not parse is an input Error naming FILE:LINE, and so are runs of one benchmark whose folders scale
// differently (one scaling.json and another, or one and none: the summarizer scores a folder at a time). The
// run fields other than world_size/hosts/backend are left for the caller.
Report import_mlperf(const std::vector<MlperfLog>& logs);

// Mean after dropping one fastest and one slowest value when there are at least 3 (MLPerf Training's
// "olympic" average); plain mean below that. Empty input gives NaN.
double olympic_mean(std::vector<double> values);

// MLCommons' result summarizer (mlcommons/logging, mlperf_logging/result_summarizer/result_summarizer.py,
// _compute_olympic_average and _compute_strong_score_standalone): `dropped` runs that did not succeed
// count as the slowest ones dropped, so of the successful times the fastest `max_dropped` and the slowest
// (max_dropped − dropped) are removed and the rest averaged. No score (nullopt) when more than
// max_dropped runs failed or nothing is left to average. max_dropped is 1 (4 for unet3d).
std::optional<double> mlperf_olympic_score(std::vector<double> successful, std::size_t dropped,
                                           std::size_t max_dropped);
// max_dropped for a benchmark, as the summarizer sets it.
std::size_t mlperf_max_dropped_runs(const std::string& benchmark);
// The runs a submission of a Training benchmark must hold (mlcommons/logging mlperf_logging/benchmark_meta.py
// _ALL_RESULT_FILE_COUNTS['training']); nullopt for a benchmark it does not list.
std::optional<std::size_t> mlperf_required_runs(const std::string& benchmark);

}  // namespace fb::reports
