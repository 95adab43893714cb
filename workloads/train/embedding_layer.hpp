#pragma once
// The input embedding of the first pipeline stage: token ids (seeded per data-parallel rank, the same for
// every micro-batch) looked up in this TP rank's rows of the vocabulary-parallel table (Megatron-LM's
// VocabParallelEmbedding), the TP sum of the ranks' partial rows (all-reduce, or the reduce-scatter of
// sequence parallelism), and the backward scatter-add of the input gradient into the table's gradient.
#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

class EmbeddingLayer {
 public:
  EmbeddingLayer(StepContext& c, Region& dense, std::int64_t table);
  // x (T × h): this rank's rows of the embedding output.
  void forward(void* x);
  // g (T × h, this rank's rows: the gradient w.r.t. the embedding output; all-gathered in place with
  // sequence parallelism) → the table's gradient.
  void backward(void* g);

 private:
  StepContext& c_;
  Region& dense_;
  const std::int64_t table_;
  DeviceBuffer ids_;  // int32, T tokens
};

}  // namespace fb::workloads::train
