#pragma once
// Element access, launch sizes and the block reduction the CUDA train kernels share (fp32 compute; fp32 or
// bf16 storage). Shared by kernels/cuda/*.cu; not part of any interface.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace fb::kernels::cuda_detail {

__device__ __forceinline__ float ld(const float* p, long long i) {
  return p[i];
}
__device__ __forceinline__ float ld(const __nv_bfloat16* p, long long i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void st(float* p, long long i, float v) {
  p[i] = v;
}
__device__ __forceinline__ void st(__nv_bfloat16* p, long long i, float v) {
  p[i] = __float2bfloat16(v);
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (at least 1, at most 65535·16).
inline unsigned blocks_for(long long n) {
  const long long b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535LL * 16 ? 65535LL * 16 : b));
}

// Block-wide sum / max (every thread of the block calls it; the result reaches all of them).
__device__ inline float block_reduce(float v, bool is_max) {
  __shared__ float shared[32];
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? shared[lane] : (is_max ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const float result = shared[0];
  __syncthreads();
  return result;
}

// Calls f with a null pointer of the element type (float* or __nv_bfloat16*).
template <typename F>
void dispatch(DType type, F&& f) {
  if (type == DType::fp32)
    f(static_cast<float*>(nullptr));
  else if (type == DType::bf16)
    f(static_cast<__nv_bfloat16*>(nullptr));
  else
    throw unsupported_error("train kernels support fp32 and bf16 activations, not " +
                            std::string(to_string(type)));
}

}  // namespace fb::kernels::cuda_detail

#define FB_ELEM_T std::remove_pointer_t<decltype(tag)>
