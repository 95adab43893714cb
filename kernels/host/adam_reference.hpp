#pragma once
// The host reference of the multi-tensor Adam (kernels/adam_multi_tensor.hpp): plain loops in fp32, the
// same update as TrainKernels::adam_update. Tests compare the CUDA kernel with it.
#include <memory>
#include <span>
#include <vector>

#include "kernels/adam_multi_tensor.hpp"

namespace fb::kernels {

// Bias corrections 1 − β^t in fp32, as every implementation computes them (host-side, once per step).
float adam_bias_correction(float beta, std::int64_t step);

// One Adam step over `tensors` (host memory); returns Σ grad² of the raw gradients when asked, else 0.
double adam_reference_step(std::span<const AdamTensor> tensors, DType type, const AdamParams& p,
                           bool grad_sum_squares);

std::unique_ptr<MultiTensorAdam> make_host_multi_tensor_adam(std::vector<AdamTensor> tensors, DType type);

}  // namespace fb::kernels
