// Growable device scratch for the CUDA train kernels (kernels/cuda/block_kernels_cuda.hpp).
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "kernels/cuda/block_kernels_cuda.hpp"

namespace fb::kernels::cuda_detail {

Scratch::~Scratch() {
  if (data_) cudaFree(data_);
}

void* Scratch::get(std::size_t bytes) {
  if (bytes <= bytes_) return data_;
  // Kernels enqueued earlier may still read the old buffer: let them finish before it is freed.
  FB_CHECK_CUDA(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
  if (data_) FB_CHECK_CUDA(cudaFree(data_));
  data_ = nullptr;
  bytes_ = 0;
  FB_CHECK_CUDA(cudaMalloc(&data_, bytes));
  bytes_ = bytes;
  return data_;
}

}  // namespace fb::kernels::cuda_detail
