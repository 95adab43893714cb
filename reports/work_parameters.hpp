#pragma once
// What defines a result's work beyond its name: the parameters `compare` checks between two results of one
// name. Most names carry their work (gemm's m x n x k, a collective's op and size, train's layout, dtype and
// sequence); simulate's leave out the window and the costs, resilience's the fault plan and the training
// shape, train's the recomputation and the optimizer. A list per benchmark of the parameters a user sets, not
// every parameter: what a run measures or chooses for itself (a peak, an algorithm, a host, the mean wall
// time of a fixed work) never reads as different work.
#include <cstddef>
#include <string>

#include "reports/report.hpp"

namespace fb::reports {

struct WorkDifferences {
  std::string shown;      // "days 54.0 -> 0.01, checkpoint_s 60.0 -> 10.0"
  std::size_t count = 0;  // all that differ, shown or not
};

// The defining parameters of `baseline`'s benchmark whose values differ in `candidate`, the first `limit`
// shown. A parameter on one side only (a report of another version) is not a difference.
WorkDifferences work_differences(const Result& baseline, const Result& candidate, std::size_t limit);

}  // namespace fb::reports
