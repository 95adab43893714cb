// Head-block copies between token-major buffers on the GPU; the host twin is kernels/host/head_copy_host.cpp.
// One thread per (row, column) loops over the heads, so a sum over heads is in head order, rounded once.
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "kernels/cuda/block_kernels_cuda.hpp"
#include "kernels/cuda/cuda_elements.cuh"

namespace fb::kernels::cuda_detail {
namespace {

template <typename T>
__global__ void copy_heads_kernel(const T* src, long long ld_src, long long src_col0, long long src_stride,
                                  T* dst, long long ld_dst, long long dst_col0, long long dst_stride,
                                  long long rows, long long heads, long long width, bool accumulate) {
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < rows * width;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long t = k / width, c = k % width;
    if (dst_stride == 0) {
      const long long o = t * ld_dst + dst_col0 + c;
      float acc = accumulate ? ld(dst, o) : 0.0f;
      for (long long j = 0; j < heads; ++j) acc += ld(src, t * ld_src + src_col0 + j * src_stride + c);
      st(dst, o, acc);
      continue;
    }
    for (long long j = 0; j < heads; ++j) {
      const long long o = t * ld_dst + dst_col0 + j * dst_stride + c;
      const float v = ld(src, t * ld_src + src_col0 + j * src_stride + c);
      st(dst, o, accumulate ? ld(dst, o) + v : v);
    }
  }
}

}  // namespace

void copy_heads(void* stream, const void* src, std::int64_t ld_src, std::int64_t src_col0,
                std::int64_t src_stride, void* dst, std::int64_t ld_dst, std::int64_t dst_col0,
                std::int64_t dst_stride, DType type, std::int64_t rows, std::int64_t heads,
                std::int64_t width, bool accumulate) {
  if (rows == 0 || heads == 0 || width == 0) return;
  dispatch(type, [&](auto* tag) {
    copy_heads_kernel<<<blocks_for(rows * width), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const FB_ELEM_T*>(src), ld_src, src_col0, src_stride, static_cast<FB_ELEM_T*>(dst),
        ld_dst, dst_col0, dst_stride, rows, heads, width, accumulate);
  });
  FB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace fb::kernels::cuda_detail
