#pragma once
// The CUDA implementation of kernels/train_kernels.hpp: the same algorithms as kernels/host, on the cuda
// backend's stream. No CUDA types here, so engine-agnostic code can include it.
#include <memory>

#include "kernels/train_kernels.hpp"

namespace fb::kernels {

// `backend` must be the cuda backend; every kernel is enqueued on its native_stream().
std::unique_ptr<TrainKernels> make_cuda_train_kernels(Backend& backend);

}  // namespace fb::kernels
