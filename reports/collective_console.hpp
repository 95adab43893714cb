#pragma once
// The collective benchmark's console table, in nccl-tests' columns: size, count, type, redop, root, then
// time, algbw, busbw and #wrong for out-of-place and in-place, and the "# Avg bus bandwidth" line.
// A view of the Results (reads params and metrics only); measuring never formats.
#include <optional>
#include <ostream>
#include <span>
#include <string>

#include "reports/report.hpp"

namespace fb::reports {

void print_collective_table(std::ostream& out, std::span<const Result> results);

// The same table a row at a time, each size printed (and flushed) as soon as it is measured, as nccl-tests
// does: a sweep's log then shows its figures live and keeps them however the job ends (SIGKILL, which no
// report survives, included). Results are added in the order they are made, one section after another (the
// sizes of one op, or one MoE phase; --split interleaves its groups and is printed whole at the end instead).
// With `inplace_twins` an out-of-place row waits for its in-place twin, measured next.
class CollectiveTableStream {
 public:
  CollectiveTableStream(std::ostream& out, bool inplace_twins);
  void add(const Result& r);
  // Prints a row still waiting, then the footer of `results` (wrong elements, averages); later adds print
  // nothing.
  void finish(std::span<const Result> results);

 private:
  void print_row(const Result* oop, const Result* inp);
  std::ostream& out_;
  bool inplace_twins_;
  bool finished_ = false;
  std::string section_;
  std::optional<Result> waiting_;  // an out-of-place row before its in-place twin
};

}  // namespace fb::reports
