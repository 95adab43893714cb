#pragma once
// The optimizer step: the gradient norm's sum of squares and Adam (AdamW with weight decay) on both
// parameter regions, with gradients averaged over micro-batches and data-parallel replicas.
#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

class Optimizer {
 public:
  Optimizer(StepContext& c, ModelWeights& w) : c_(c), w_(w) {}
  // This rank's share of Σ grad² over the world (DP replicas hold the same reduced gradients: each counted
  // once in the world-wide sum).
  double gradient_sum_squares();
  // One Adam update, 1-based step number for bias correction.
  void update(std::int64_t step_number);

 private:
  double replicas(const Region& r) const;
  StepContext& c_;
  ModelWeights& w_;
};

}  // namespace fb::workloads::train
