#pragma once
// Scaled-dot-product attention, forward and backward, in plain loops: the reference the fused engines are
// tested against (layout and stats as kernels/attention_engine.hpp; fp32 in and out, fp64 inside).
// Forward (Vaswani et al. 2017): P = softmax(scale·Q·Kᵀ) over the visible keys, O = P·V.
// Backward (as FlashAttention-2, Dao 2023, Algorithm 2, without the tiling): D_i = dO_i·O_i,
// dP = dO·Vᵀ, dS = P ⊙ (dP − D), dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO.
#include "kernels/attention_engine.hpp"

namespace fb::kernels {

void attention_forward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                 float* o, float* stats);

void attention_backward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                  const float* o, const float* d_o, float* dq, float* dk, float* dv);

}  // namespace fb::kernels
