#pragma once
// Scaled-dot-product attention, forward and backward, in plain loops: the reference the fused engines are
// tested against (layout and stats as kernels/attention_engine.hpp; fp32 in and out, fp64 inside).
// Forward (Vaswani et al. 2017): P = softmax(scale·Q·Kᵀ) over the visible keys, O = P·V.
// Backward (as FlashAttention-2, Dao 2023, Algorithm 2, without the tiling): D_i = dO_i·O_i,
// dP = dO·Vᵀ, dS = P ⊙ (dP − D), dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO.
#include <memory>

#include "kernels/attention_engine.hpp"

namespace fb::kernels {

void attention_forward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                 float* o, float* stats);

void attention_backward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                  const float* o, const float* d_o, float* dq, float* dk, float* dv);

// The reference as a FusedAttention on host memory (the `reference` engine): tensors in the shape's strides
// and the step's type (fp32, bf16 or fp16) are widened to packed fp32, run through the functions above and
// rounded back.
std::unique_ptr<FusedAttention> make_reference_attention();

}  // namespace fb::kernels
