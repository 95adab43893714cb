#pragma once
// Data-parallel gradient reduction in buckets of --bucket-layers layers (the output layer is its own bucket):
// dense gradients over the DP group, expert gradients over the expert-DP group, each bucket reduced as soon
// as the last micro-batch's backward has produced it; with --overlap without waiting (non-blocking).
#include <memory>
#include <vector>

#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

class GradientReduction {
 public:
  GradientReduction(StepContext& c, ModelWeights& w) : c_(c), w_(w) {}
  // The last micro-batch's backward has finished `layer` (index in this stage; layers() = the output layer).
  void layer_done(std::int64_t layer);
  // Waits for the non-blocking reductions still in flight.
  void finish();

 private:
  void reduce_range(Region& r, Communicator* comm, std::int64_t size, std::int64_t begin, std::int64_t end,
                    const char* name);
  StepContext& c_;
  ModelWeights& w_;
  std::vector<std::unique_ptr<CollectiveRequest>> pending_;
};

}  // namespace fb::workloads::train
