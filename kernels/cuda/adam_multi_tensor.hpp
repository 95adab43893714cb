#pragma once
// The CUDA multi-tensor Adam (kernels/adam_multi_tensor.hpp): one kernel launch per step over a device-side
// table of every tensor. No CUDA types here.
#include <memory>
#include <vector>

#include "kernels/adam_multi_tensor.hpp"

namespace fb::kernels {

// `backend` must be the cuda backend; the kernel runs on its native_stream().
std::unique_ptr<MultiTensorAdam> make_cuda_multi_tensor_adam(Backend& backend,
                                                             std::vector<AdamTensor> tensors, DType type);

}  // namespace fb::kernels
