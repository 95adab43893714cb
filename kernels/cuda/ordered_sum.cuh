// Reproducible fp64 sums on the GPU. A kernel writes one partial per block; ordered_sum_kernel then adds them
// in a fixed order (one block: each thread a fixed strided subset, then a fixed shuffle tree). Unlike an
// atomicAdd per block, whose order is whichever block finishes first, the result depends only on the
// partials, so the reported loss and gradient norm repeat bit for bit from run to run.
#pragma once

#include <cuda_runtime.h>

namespace fb::kernels {

constexpr int kOrderedSumThreads = 1024;

// Block-wide fp64 sum in a fixed order; every thread calls it, thread 0 gets the result.
__device__ inline double block_sum_fixed_order(double v) {
  __shared__ double warp_sums[32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0;
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  __syncthreads();  // warp_sums may be reused by the caller's next call
  return v;
}

namespace {  // each .cu that launches it has its own copy (no relocatable device code)

// *out = the sum of partials[0, n), launched as <<<1, kOrderedSumThreads>>>.
__global__ void ordered_sum_kernel(const double* partials, long long n, double* out) {
  double s = 0;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) s += partials[i];
  s = block_sum_fixed_order(s);
  if (threadIdx.x == 0) *out = s;
}

}  // namespace

}  // namespace fb::kernels
