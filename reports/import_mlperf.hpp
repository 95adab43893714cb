#pragma once
// MLPerf Training logs (`:::MLLOG {json}` lines, mlperf_logging) as a factorybench report. Each log is one
// run: time to train = run_stop.time_ms − run_start.time_ms (minutes), throughput where the log carries it
// (key "throughput", or "tracked_stats" with value.throughput; samples/s), the last eval_accuracy, and the
// submission metadata (submission_benchmark, _org, _division, _status, _platform, global_batch_size).
// A run whose run_stop status is not "success" (or that has no run_stop) is a failed result.
// With several runs of one benchmark, result BENCHMARK/score holds the MLPerf-style score: the mean time to
// train of the successful runs after dropping the fastest and the slowest (when there are at least 3).
#include <string>
#include <utility>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct MlperfLog {
  std::string source;  // file name, for errors and params
  std::string text;
};

// Lines without ":::MLLOG" are ignored (logs interleave with other output); a ":::MLLOG" line whose JSON
// does not parse is an input Error naming FILE:LINE. The run fields other than world_size/hosts/backend are
// left for the caller.
Report import_mlperf(const std::vector<MlperfLog>& logs);

// Mean after dropping one fastest and one slowest value when there are at least 3 (MLPerf Training's
// "olympic" average); plain mean below that. Empty input gives NaN.
double olympic_mean(std::vector<double> values);

}  // namespace fb::reports
