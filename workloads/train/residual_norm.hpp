#pragma once
// The residual connections and RMSNorms between the sublayers of a pre-norm transformer (Llama, Mixtral,
// DeepSeek: x_mid = x + attention(norm1(x)), out = x_mid + mlp(norm2(x_mid))), each residual add fused with
// the norm that follows it into one kernel, and the norm's backward fused with the residual gradient.
// All on this rank's rows of the residual stream (T, or T/tp with sequence parallelism), h wide. The
// residual stream itself (x, out: LayerActs x_in, x_mid) holds only those rows (StepContext::rows × h), as
// Megatron-LM keeps it sharded under sequence parallelism; the deltas, norm outputs and gradients are
// T × h buffers whose rows these functions find with StepContext::my_rows.
#include "workloads/train/model_weights.hpp"
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

// The norm target of tensor `gamma_t` (a dense norm gain) into `normed` / `rstd`.
NormTarget norm_target(const StepContext& c, const Region& dense, std::int64_t gamma_t, void* normed,
                       float* rstd);

// out = x + delta; with a norm target, also target.normed = RMSNorm(out) in the same kernel.
void residual_add(StepContext& c, void* out, const void* x, const void* delta, const NormTarget& next);
// target.normed = RMSNorm(x): the first layer of a pipeline stage, whose input no sublayer produced here.
void norm_only(StepContext& c, const void* x, const NormTarget& target);
// dx = d_residual (may be null) + the RMSNorm backward of dy (the gradient w.r.t. the normed values) at x;
// the gain's gradient is accumulated. dx must not be dy or x.
void norm_backward(StepContext& c, Region& dense, std::int64_t gamma_t, const void* dy, const void* x,
                   const float* rstd, const void* d_residual, void* dx);

}  // namespace fb::workloads::train
