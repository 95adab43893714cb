#pragma once
// The attention benchmark's console table: one row per shape (fwd+bwd TFLOP/s and its spread over all
// ranks' iterations, forward and backward medians, MFU, check). A view of the Results and the summary.
#include <ostream>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

void print_attention_table(std::ostream& out, std::span<const Result> results, const nlohmann::json& summary);

// The same table a shape at a time, each row printed (and flushed) as soon as the shape is measured, as gemm
// and collective print theirs: a run over many sequence lengths shows its figures live, and its log keeps
// them however the job ends. `names` are the shapes', in the run's order (the name column's width), and
// any_causal/any_full whether some of them are causal or full (how the FLOPs line says they are counted);
// begin() prints that line with the engine, known before the first shape; the column header comes with the
// first row.
class AttentionTableStream {
 public:
  AttentionTableStream(std::ostream& out, std::span<const std::string> names, bool any_causal, bool any_full);
  void begin(const std::string& engine);
  void add(const Result& r);
  // After the last row (or at a signal); later adds print nothing.
  void finish();

 private:
  std::ostream& out_;
  std::size_t width_ = 4;
  std::string counted_;
  bool started_ = false, finished_ = false;
};

}  // namespace fb::reports
