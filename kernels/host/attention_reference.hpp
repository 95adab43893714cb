#pragma once
// Scaled-dot-product attention, forward and backward, in plain loops: the reference the fused engines are
// tested against (layout and stats as kernels/attention_engine.hpp; fp32 in and out, fp64 inside).
// Forward (Vaswani et al. 2017): P = softmax(scale·Q·Kᵀ) over the visible keys, O = P·V.
// Backward (as FlashAttention-2, Dao 2023, Algorithm 2, without the tiling): D_i = dO_i·O_i,
// dP = dO·Vᵀ, dS = P ⊙ (dP − D), dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO.
#include <memory>

#include "kernels/attention_engine.hpp"

namespace fb::kernels {

// fp8 emulation (the reference engine in fp8_e4m3): S and dP (kernels/attention_engine.hpp) are rounded
// to e4m3 at these scales before the products that read them, as cuDNN's fp8 kernels round them, and
// their amax (before scaling) is returned. Everything else stays exact.
struct AttentionFp8Emulation {
  double s_scale = 0, dp_scale = 0;  // 0 = not rounded
  double s_amax = 0, dp_amax = 0;    // out: largest P (forward), largest |dP| (backward)
};

void attention_forward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                 float* o, float* stats, AttentionFp8Emulation* fp8 = nullptr);

void attention_backward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                  const float* o, const float* d_o, float* dq, float* dk, float* dv,
                                  AttentionFp8Emulation* fp8 = nullptr);

// The reference as a FusedAttention on host memory (the `reference` engine): tensors in the shape's strides
// and the step's type (fp32, bf16, fp16, or fp8_e4m3 read and written through the fp8 scaling block, with
// S and dP rounded as above) are widened to packed fp32, run through the functions above and rounded back.
std::unique_ptr<FusedAttention> make_reference_attention();

}  // namespace fb::kernels
