#pragma once
// The routed experts' linear layers as one grouped GEMM per pass (GemmEngine::run_grouped: cuBLAS grouped
// batched GEMM on cuda), with the real per-expert row counts: expert e's rows lie consecutively,
// expert-major, after those of experts 0..e−1. Expert e's weight is tensor `first + 2e` of the expert region
// (in × out).
#include <cstdint>
#include <vector>

#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

// forward: dst_e = W_eᵀ·src_e (src rows `in` wide, dst rows `out` wide);
// dgrad:   dst_e = W_e·src_e  (src rows `out` wide: the output gradient; dst rows `in` wide).
void expert_matmul(StepContext& c, const Region& experts, std::int64_t first, bool dgrad,
                   const std::vector<std::int64_t>& rows, const void* src, void* dst);
// dW_e += x_e·dy_eᵀ (x rows `in` wide, dy rows `out` wide).
void expert_wgrad(StepContext& c, Region& experts, std::int64_t first, const std::vector<std::int64_t>& rows,
                  const void* x, const void* dy);

}  // namespace fb::workloads::train
