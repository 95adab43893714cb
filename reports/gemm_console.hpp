#pragma once
// The GEMM benchmark's console table: one row per shape (median TFLOP/s and its spread over all ranks'
// iterations, median time, MFU, algorithm, check), then the slow ranks and the sweep's best shape.
// A view of the Results and the gemm summary; measuring never formats.
#include <ostream>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

void print_gemm_table(std::ostream& out, std::span<const Result> results, const nlohmann::json& summary);

// The same table a shape at a time, each row printed (and flushed) as soon as the shape is measured: a sweep
// of thousands of shapes shows its figures live, and its log keeps them however the job ends. `names` are
// the shapes' names, in the run's order (the name column's width); begin() prints the engine and peak lines
// (the summary's fields, known before the first shape); the column header comes with the first row (the
// algo column when that row has an algorithm); finish() prints the sweep's best shape and the slow ranks.
class GemmTableStream {
 public:
  GemmTableStream(std::ostream& out, std::span<const std::string> names);
  void begin(const nlohmann::json& head);
  void add(const Result& r);
  // After the last row (`summary` empty when the run was stopped); later adds print nothing.
  void finish(const nlohmann::json& summary);

 private:
  std::ostream& out_;
  std::size_t width_ = 4;
  bool started_ = false, algo_ = false, finished_ = false;
};

}  // namespace fb::reports
