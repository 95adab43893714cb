#pragma once
// The one-line-per-step summary a person reads at a glance (`report --format summary`, the end of `suite`):
// each suite step (or, outside a suite, each benchmark) with its headline figure and its verdict. The figure
// is chosen by one small table of rules per benchmark kind (headline.cpp), so a new benchmark adds one row.
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct Headline {
  std::string step;     // suite step name, or the benchmark when the report is not a suite
  std::string verdict;  // "ok", "FAILED", "skipped"
  std::string figure;   // "512.3 TFLOP/s (bf16/8192x8192x8192), MFU 51.8%"
  std::string reason;   // the first failure's message, empty when ok
  std::size_t results = 0, failed = 0;
};

// Steps in order of first appearance.
std::vector<Headline> headlines(const Report& report);

// The lines as text: "  gemm           ok      0.030 TFLOP/s (fp32/512x512x512), MFU 14.5%".
std::string render_headlines(const std::vector<Headline>& lines);

// The metrics a benchmark kind's headline shows, in its order (train: mfu, step_time_s,
// model_tflops_per_gpu, loss); empty for a kind without a rule. Tables put them first.
std::vector<std::string> headline_metrics(const std::string& benchmark);

}  // namespace fb::reports
