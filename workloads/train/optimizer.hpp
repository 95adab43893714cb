#pragma once
// The optimizer step: Adam (AdamW with weight decay) on every parameter tensor of both regions in one
// multi-tensor pass (kernels/adam_multi_tensor.hpp: one kernel launch on cuda), gradients averaged over
// micro-batches and data-parallel replicas, and the gradient norm's sum of squares from the same pass. With
// --distributed-optimizer (ZeRO-1, optimizer_shards.hpp) each rank updates its shard and the step ends with
// the all-gather of the updated weights.
#include <memory>

#include "kernels/adam_multi_tensor.hpp"
#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

class Optimizer {
 public:
  Optimizer(StepContext& c, ModelWeights& w);
  // One Adam update (1-based step number for bias correction). Returns this rank's share of Σ grad² over
  // the world before the update: DP replicas hold the same reduced gradients (or, sharded, each its own
  // part) and TP ranks the same replicated tensors, so each is weighted to count once in the world-wide sum.
  double step(std::int64_t step_number);

 private:
  StepContext& c_;
  ModelWeights& w_;
  std::unique_ptr<kernels::MultiTensorAdam> adam_;
};

}  // namespace fb::workloads::train
