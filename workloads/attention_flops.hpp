#pragma once
// Attention-core FLOPs of one shape, counted as Megatron-LM counts them (num_floating_point_operations):
// forward = the score GEMM Q·Kᵀ (2·s²·heads·head_dim per sequence) and the context GEMM P·V
// (2·s²·heads·value_dim), halved under a causal mask; backward = twice the forward. Softmax, scaling and
// the mask are not counted. Issue 15's table: 32 heads × d 128 at s 8192 causal is 0.550 TFLOP forward,
// 1.649 TFLOP forward + backward per sequence.
#include "kernels/attention_engine.hpp"

namespace fb::workloads {

struct AttentionFlopCount {
  double forward = 0, backward = 0;
  double total() const { return forward + backward; }
};

AttentionFlopCount attention_flops(const kernels::AttentionShape& shape);

}  // namespace fb::workloads
