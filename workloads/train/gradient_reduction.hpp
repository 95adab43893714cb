#pragma once
// Gradient reduction after the last micro-batch's backward. First, over the TP group, the gradients of
// tensors every TP rank holds whole but computes from part of the tokens: the router (each TP rank routes
// its own token slice) and, with sequence parallelism, the norm gains (each rank normalises its own rows),
// as Megatron-LM all-reduces its sequence-parallel parameters; and, with fewer kv heads than TP ranks, each
// kv head's gradient over the TP ranks holding it (each computed it from its own query heads). Then
// data-parallel reduction in buckets of
// --bucket-layers layers (the output layer with the final norm, and the embedding, are buckets of their
// own): dense gradients over the DP group, expert gradients over the expert-DP group, each bucket reduced as
// soon as the backward has produced it; with --overlap without waiting (non-blocking). With
// --distributed-optimizer each bucket is reduce-scattered instead: a rank keeps the sum of its own part
// (workloads/train/optimizer_shards.hpp), which is all its optimizer shard updates.
#include <memory>
#include <vector>

#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

class GradientReduction {
 public:
  GradientReduction(StepContext& c, ModelWeights& w) : c_(c), w_(w) {}
  // The last micro-batch's backward has finished `layer` (index in this stage; layers() = the output layer).
  void layer_done(std::int64_t layer);
  // The last micro-batch's backward has reached the embedding (first stage).
  void embedding_done();
  // Waits for the non-blocking reductions still in flight.
  void finish();

 private:
  void tp_reduce_partial(std::int64_t layer);
  void tp_reduce_tensor(std::int64_t t);
  void kv_copies_reduce(std::int64_t t);
  void reduce_range(Region& r, Communicator* comm, std::int64_t size, std::int64_t begin, std::int64_t end,
                    const char* group, const char* what);
  StepContext& c_;
  ModelWeights& w_;
  std::vector<std::unique_ptr<CollectiveRequest>> pending_;
};

}  // namespace fb::workloads::train
