// Rotary position embedding on the GPU; the host twin is kernels/host/rope_host.cpp. One thread per rotated
// pair (row, head, i), reading the shared cos/sin table (rope_table, uploaded once) and rounding each
// product and sum on its own as the host does (no fused multiply-add), so both give the same bits.
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "kernels/cuda/block_kernels_cuda.hpp"
#include "kernels/cuda/cuda_elements.cuh"

namespace fb::kernels::cuda_detail {
namespace {

template <typename T>
__global__ void rope_kernel(T* x, long long rows, long long pitch, long long col0, long long heads,
                            long long head_stride, long long half, long long seq, const float* cos_table,
                            const float* sin_table, bool inverse) {
  const long long pairs = rows * heads * half;
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < pairs;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = k % half, j = (k / half) % heads, t = k / (half * heads);
    const long long p = (t % seq) * half + i;
    const float c = cos_table[p], s = inverse ? -sin_table[p] : sin_table[p];
    const long long at = t * pitch + col0 + j * head_stride + i;
    const float a = ld(x, at), b = ld(x, at + half);
    st(x, at, __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s)));
    st(x, at + half, __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s)));
  }
}

}  // namespace

void rope(void* stream, void* x, DType type, std::int64_t rows, std::int64_t pitch, std::int64_t col0,
          std::int64_t heads, std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq,
          const float* cos_table, const float* sin_table, bool inverse) {
  const long long half = rot_dim / 2;
  if (rows == 0 || heads == 0 || half == 0) return;
  dispatch(type, [&](auto* tag) {
    rope_kernel<<<blocks_for(rows * heads * half), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<FB_ELEM_T*>(x), rows, pitch, col0, heads, head_stride, half, seq, cos_table, sin_table,
        inverse);
  });
  FB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace fb::kernels::cuda_detail
