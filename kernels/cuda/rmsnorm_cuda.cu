// RMSNorm forward (residual add fused in front) and backward on the GPU; the host twin is
// kernels/host/rmsnorm_host.cpp (formulas there). One block per row for the row statistics; the weight
// gradient is a deterministic two-pass column reduction: fp32 partial sums over blocks of kNormRowBlock rows,
// then the blocks in order, as the host sums them.
#include <cuda_runtime.h>

#include "core/cuda_check.hpp"
#include "kernels/cuda/block_kernels_cuda.hpp"
#include "kernels/cuda/cuda_elements.cuh"
#include "kernels/train_kernels.hpp"

namespace fb::kernels::cuda_detail {
namespace {

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_forward_kernel(const T* x, const T* delta, T* sum, const T* gamma, T* y, float* rstd,
                           long long width, long long pitch, float eps) {
  const long long row = blockIdx.x * pitch;
  float squares = 0;
  for (long long c = threadIdx.x; c < width; c += blockDim.x) {
    float v = ld(x, row + c);
    if (delta) {  // the residual add, stored in the step's type; the norm reads the stored value
      st(sum, row + c, v + ld(delta, row + c));
      v = ld(sum, row + c);
    }
    squares += v * v;
  }
  squares = block_reduce(squares, false);
  const float inv = 1.0f / sqrtf(squares / static_cast<float>(width) + eps);
  if (threadIdx.x == 0) rstd[blockIdx.x] = inv;
  const T* src = delta ? sum : x;
  for (long long c = threadIdx.x; c < width; c += blockDim.x)
    st(y, row + c, ld(src, row + c) * inv * ld(gamma, c));
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    rmsnorm_backward_kernel(const T* dy, const T* s, const T* gamma, const float* rstd, const T* d_residual,
                            T* dx, long long width, long long pitch) {
  const long long row = blockIdx.x * pitch;
  const float r = rstd[blockIdx.x];
  float dot = 0;
  for (long long c = threadIdx.x; c < width; c += blockDim.x)
    dot += ld(dy, row + c) * ld(gamma, c) * (ld(s, row + c) * r);
  const float mean = block_reduce(dot, false) / static_cast<float>(width);
  for (long long c = threadIdx.x; c < width; c += blockDim.x) {
    const float xh = ld(s, row + c) * r;
    float v = r * (ld(dy, row + c) * ld(gamma, c) - xh * mean);
    if (d_residual) v += ld(d_residual, row + c);
    st(dx, row + c, v);
  }
}

// Pass 1: partial[b][c] = Σ over rows [b·kNormRowBlock, …) of dy·x̂, one thread per (block, column).
template <typename T>
__global__ void rmsnorm_gamma_partial_kernel(const T* dy, const T* s, const float* rstd, long long rows,
                                             long long width, long long pitch, float* partial) {
  // Row blocks on grid x (up to 2^31 − 1), column blocks on y (width / 256 stays far below 65,535).
  const long long c = blockIdx.y * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (c >= width) return;
  const long long b = blockIdx.x, end = min(rows, (b + 1) * kNormRowBlock);
  float part = 0;
  for (long long r = b * kNormRowBlock; r < end; ++r)
    part += ld(dy, r * pitch + c) * (ld(s, r * pitch + c) * rstd[r]);
  partial[b * width + c] = part;
}

// Pass 2: the blocks in order, added to d_gamma once.
template <typename T>
__global__ void rmsnorm_gamma_total_kernel(const float* partial, long long blocks, long long width,
                                           T* d_gamma) {
  const long long c = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (c >= width) return;
  float total = 0;
  for (long long b = 0; b < blocks; ++b) total += partial[b * width + c];
  st(d_gamma, c, ld(d_gamma, c) + total);
}

}  // namespace

void rmsnorm_forward(void* stream, const void* x, const void* delta, void* sum, const void* gamma, void* y,
                     float* rstd, DType type, std::int64_t rows, std::int64_t width, std::int64_t pitch,
                     float eps) {
  if (rows == 0 || width == 0) return;
  dispatch(type, [&](auto* tag) {
    rmsnorm_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const FB_ELEM_T*>(x), static_cast<const FB_ELEM_T*>(delta), static_cast<FB_ELEM_T*>(sum),
        static_cast<const FB_ELEM_T*>(gamma), static_cast<FB_ELEM_T*>(y), rstd, width, pitch, eps);
  });
  FB_CHECK_CUDA(cudaGetLastError());
}

void rmsnorm_backward(void* stream, Scratch& scratch, const void* dy, const void* s, const void* gamma,
                      const float* rstd, const void* d_residual, void* dx, void* d_gamma, DType type,
                      std::int64_t rows, std::int64_t width, std::int64_t pitch) {
  if (rows == 0 || width == 0) return;
  auto st_ = static_cast<cudaStream_t>(stream);
  const long long blocks = (rows + kNormRowBlock - 1) / kNormRowBlock;
  auto* partial = static_cast<float*>(scratch.get(static_cast<std::size_t>(blocks * width) * sizeof(float)));
  const unsigned col_blocks = static_cast<unsigned>((width + kThreads - 1) / kThreads);
  dispatch(type, [&](auto* tag) {
    using T = FB_ELEM_T;
    // dγ before dx: dx may alias d_residual, never dy or s, so the order only matters for clarity.
    rmsnorm_gamma_partial_kernel<<<dim3(static_cast<unsigned>(blocks), col_blocks), kThreads, 0, st_>>>(
        static_cast<const T*>(dy), static_cast<const T*>(s), rstd, rows, width, pitch, partial);
    rmsnorm_gamma_total_kernel<<<col_blocks, kThreads, 0, st_>>>(partial, blocks, width,
                                                                 static_cast<T*>(d_gamma));
    rmsnorm_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, st_>>>(
        static_cast<const T*>(dy), static_cast<const T*>(s), static_cast<const T*>(gamma), rstd,
        static_cast<const T*>(d_residual), static_cast<T*>(dx), width, pitch);
  });
  FB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace fb::kernels::cuda_detail
