#pragma once
// Causal multi-head attention on lower-triangular blocks (scores, softmax, context) and its backward, over
// the feature-major Q/K/V columns of qkv_t. GQA shares K and V inside a kv group; MLA is one head per group.
#include <cstdint>

#include "workloads/train/step_context.hpp"
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

class AttentionCore {
 public:
  explicit AttentionCore(StepContext& c);
  // Elements of saved probabilities per sequence (all heads, the lower-triangular blocks only).
  std::int64_t probs_per_seq() const { return probs_per_seq_; }
  // qkv_t → probs (saved) and ctx_t.
  void forward(LayerActs& a);
  // d ctx_t → d qkv_t (accumulated into dqkv for K and V; dqkv must be zero first).
  void backward(LayerActs& a, const void* dctx, void* dqkv);

 private:
  // Query block i of B tokens attends keys [0, (i+1)·B); offset = probs of head (group 0, j = 0) of the block
  // within the sequence's region.
  struct Strip {
    std::int64_t keys, offset;
  };
  Strip strip(std::int64_t i) const;
  StepContext& c_;
  std::int64_t probs_per_seq_ = 0;
  DeviceBuffer dprobs_;
};

}  // namespace fb::workloads::train
