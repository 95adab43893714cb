#pragma once
// The host (C++) implementation of kernels/train_kernels.hpp: the reference the CUDA kernels are tested
// against. Pointers are ordinary host memory.
#include <memory>

#include "kernels/train_kernels.hpp"

namespace fb::kernels {

std::unique_ptr<TrainKernels> make_host_train_kernels();

}  // namespace fb::kernels
