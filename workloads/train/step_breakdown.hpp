#pragma once
// The step-time breakdown of `train`: every stretch of a training step is charged to one category
// (docs/train.md). The category list travels in the report (extra.breakdown_categories), so printers draw
// whatever a result carries.
#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace fb::workloads::train {

enum Cat : int {
  kGemm,
  kAttention,
  kMoeRouting,
  kElementwise,
  kTpComm,
  kEpComm,
  kDpComm,
  kOptimizer,
  kBubble,
  kCats
};
using CatSeconds = std::array<double, kCats>;

// Report names of the categories, in Cat order.
const std::vector<std::string>& breakdown_categories();

// The compute part of a step (GEMMs, attention, routing, elementwise): the straggler score input.
double compute_seconds(const CatSeconds& s);

// Charges wall time to the current category until the next mark. With profiling on, every change of
// category synchronises the backend first, so asynchronous work lands in the category that issued it.
class StepTimer {
 public:
  explicit StepTimer(Backend& backend) : backend_(backend) {}
  // Starts a step: all categories zero, the clock charging elementwise.
  void start(bool profile);
  void mark(Cat c);
  // Ends the step: charges the last stretch and returns the seconds since start().
  double stop();
  const CatSeconds& seconds() const { return cat_; }

 private:
  using Clock = std::chrono::steady_clock;
  Backend& backend_;
  bool profile_ = false;
  CatSeconds cat_{};
  Cat current_ = kElementwise;
  Clock::time_point start_, mark_start_;
};

}  // namespace fb::workloads::train
