// One-launch multi-tensor Adam. The host builds a table of tensors, each split into chunks of kChunk
// elements; block b of the single launch finds its tensor by binary search over the tensors' first chunks
// and updates that chunk. Each thread moves 8 elements at a time with 16-byte loads and stores (two float4
// for each fp32 array, one uint4 for 8 bf16/fp16 values) where the tensor's pointers are 16-byte aligned,
// else element by element. Per parameter a bf16 step moves 28 bytes: master, m, v read and written (24),
// grad read (2), weights written (2). The multi-tensor table follows the idea of NVIDIA Apex's
// multi_tensor_apply (one launch over many tensors); the code here is our own.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "kernels/cuda/adam_element.cuh"
#include "kernels/cuda/adam_multi_tensor.hpp"
#include "kernels/cuda/ordered_sum.cuh"
#include "kernels/host/adam_reference.hpp"

namespace fb::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kVector = 8;                                  // elements per thread per pass (16 B of bf16)
constexpr int kPasses = 4;                                  // passes per block over its chunk
constexpr long long kChunk = kThreads * kVector * kPasses;  // 8192 elements per block

struct TableEntry {
  float* master;
  float* m;
  float* v;
  const void* grad;
  void* param;
  long long count;
  long long first_chunk;  // index of this tensor's first chunk in the launch
  int vector_ok;          // every pointer 16-byte aligned
  float grad_scale;       // the tensor's own, times AdamParams::grad_scale in the kernel
  double norm_weight;
};

// 8 consecutive elements widened to fp32 / narrowed from fp32 (RNE), with 16-byte accesses.
__device__ __forceinline__ void load8(const float* p, float out[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z,
  out[7] = b.w;
}
__device__ __forceinline__ void store8(float* p, const float in[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(in[0], in[1], in[2], in[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(in[4], in[5], in[6], in[7]);
}
__device__ __forceinline__ void load8(const __nv_bfloat16* p, float out[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
  for (int k = 0; k < 4; ++k) {
    const float2 f = __bfloat1622float2(h[k]);
    out[2 * k] = f.x, out[2 * k + 1] = f.y;
  }
}
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float in[8]) {
  uint4 u;
  __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&u);
  for (int k = 0; k < 4; ++k) h[k] = __floats2bfloat162_rn(in[2 * k], in[2 * k + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}
__device__ __forceinline__ void load8(const __half* p, float out[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const __half2* h = reinterpret_cast<const __half2*>(&u);
  for (int k = 0; k < 4; ++k) {
    const float2 f = __half22float2(h[k]);
    out[2 * k] = f.x, out[2 * k + 1] = f.y;
  }
}
__device__ __forceinline__ void store8(__half* p, const float in[8]) {
  uint4 u;
  __half2* h = reinterpret_cast<__half2*>(&u);
  for (int k = 0; k < 4; ++k) h[k] = __floats2half2_rn(in[2 * k], in[2 * k + 1]);
  *reinterpret_cast<uint4*>(p) = u;
}
__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {
  return __bfloat162float(x);
}
__device__ __forceinline__ float to_float(__half x) {
  return __half2float(x);
}
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}

struct Hyper {
  float lr, beta1, beta2, eps, weight_decay, c1, c2, grad_scale;
};

// The update of one element, rounded as the host reference rounds it (adam_element.cuh).
__device__ __forceinline__ void adam_element(float& master, float& m, float& v, float g, const Hyper& h) {
  cuda_detail::adam_element_rn(master, m, v, g, h.beta1, h.beta2, h.eps, h.weight_decay, h.c1, h.c2, h.lr);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    adam_multi_tensor_kernel(const TableEntry* table, int tensors, Hyper h, double* chunk_sum_squares) {
  // The tensor owning this block's chunk: the last entry whose first_chunk <= blockIdx.x.
  const long long chunk = blockIdx.x;
  int lo = 0, hi = tensors - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (table[mid].first_chunk <= chunk)
      lo = mid;
    else
      hi = mid - 1;
  }
  const TableEntry t = table[lo];
  const T* grad = static_cast<const T*>(t.grad);
  T* param = static_cast<T*>(t.param);
  // Pointers read from a table, unlike kernel arguments, are generic to the compiler, which then emits
  // generic LD.E/ST.E; every one of them is device memory, and saying so gives LDG/STG (checked in SASS).
  __builtin_assume(__isGlobal(t.master));
  __builtin_assume(__isGlobal(t.m));
  __builtin_assume(__isGlobal(t.v));
  __builtin_assume(__isGlobal(grad));
  __builtin_assume(__isGlobal(param));
  const long long start = (chunk - t.first_chunk) * kChunk;
  const float scale = h.grad_scale * t.grad_scale;  // as the host reference rounds it
  // Σ g² in fp64 per element, as the host reference adds it (an fp32 g² overflows above 1.8e19).
  double squares = 0.0;
  for (int pass = 0; pass < kPasses; ++pass) {
    const long long i = start + (static_cast<long long>(pass) * kThreads + threadIdx.x) * kVector;
    if (i >= t.count) break;
    if (t.vector_ok && i + kVector <= t.count) {
      float w[8], m[8], v[8], g[8];
      load8(t.master + i, w);
      load8(t.m + i, m);
      load8(t.v + i, v);
      load8(grad + i, g);
      for (int k = 0; k < kVector; ++k) {
        squares += static_cast<double>(g[k]) * g[k];
        adam_element(w[k], m[k], v[k], __fmul_rn(g[k], scale), h);
      }
      store8(t.master + i, w);
      store8(t.m + i, m);
      store8(t.v + i, v);
      store8(param + i, w);
    } else {
      const long long end = i + kVector < t.count ? i + kVector : t.count;
      for (long long j = i; j < end; ++j) {
        const float g = to_float(grad[j]);
        squares += static_cast<double>(g) * g;
        float w = t.master[j], m = t.m[j], v = t.v[j];
        adam_element(w, m, v, __fmul_rn(g, scale), h);
        t.master[j] = w, t.m[j] = m, t.v[j] = v;
        param[j] = from_float<T>(w);
      }
    }
  }
  if (!chunk_sum_squares) return;
  // Block sum of the raw gradient squares, one partial per chunk; ordered_sum_kernel adds them in chunk
  // order.
  const double s = block_sum_fixed_order(squares);
  if (threadIdx.x == 0) chunk_sum_squares[chunk] = s * t.norm_weight;
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

class CudaMultiTensorAdam final : public MultiTensorAdam {
 public:
  CudaMultiTensorAdam(Backend& backend, std::vector<AdamTensor> tensors, DType type)
      : stream_(static_cast<cudaStream_t>(backend.native_stream())), type_(type) {
    if (type != DType::fp32 && type != DType::bf16 && type != DType::fp16)
      throw unsupported_error("multi-tensor Adam supports fp32, bf16 and fp16 weights, not " +
                              std::string(to_string(type)));
    std::vector<TableEntry> table;
    for (const AdamTensor& t : tensors) {
      if (t.count <= 0) continue;  // empty tensors own no chunk
      const bool ok =
          aligned16(t.master) && aligned16(t.m) && aligned16(t.v) && aligned16(t.grad) && aligned16(t.param);
      table.push_back(
          {t.master, t.m, t.v, t.grad, t.param, t.count, chunks_, ok ? 1 : 0, t.grad_scale, t.norm_weight});
      chunks_ += (t.count + kChunk - 1) / kChunk;
    }
    if (chunks_ > 0x7fffffffLL) throw usage_error("multi-tensor Adam: too many parameters for one launch");
    entries_ = static_cast<int>(table.size());
    table_ = backend.allocate(std::max<std::size_t>(1, table.size()) * sizeof(TableEntry));
    if (!table.empty()) backend.copy_to_device(table_, table.data(), table.size() * sizeof(TableEntry));
    sum_ = backend.allocate(sizeof(double));
    partials_ = backend.allocate(static_cast<std::size_t>(std::max(chunks_, 1LL)) * sizeof(double));
  }

  double step(const AdamParams& p, bool grad_sum_squares) override {
    const Hyper h{p.lr,
                  p.beta1,
                  p.beta2,
                  p.eps,
                  p.weight_decay,
                  adam_bias_correction(p.beta1, p.step),
                  adam_bias_correction(p.beta2, p.step),
                  p.grad_scale};
    double* partials = grad_sum_squares ? partials_.as<double>() : nullptr;
    if (chunks_ > 0) {
      const auto* table = table_.as<const TableEntry>();
      const dim3 grid(static_cast<unsigned>(chunks_));
      if (type_ == DType::bf16)
        adam_multi_tensor_kernel<__nv_bfloat16><<<grid, kThreads, 0, stream_>>>(table, entries_, h, partials);
      else if (type_ == DType::fp16)
        adam_multi_tensor_kernel<__half><<<grid, kThreads, 0, stream_>>>(table, entries_, h, partials);
      else
        adam_multi_tensor_kernel<float><<<grid, kThreads, 0, stream_>>>(table, entries_, h, partials);
      FB_CHECK_CUDA(cudaGetLastError());
    }
    if (!grad_sum_squares) return 0.0;
    double* sum = sum_.as<double>();
    if (chunks_ > 0) {
      ordered_sum_kernel<<<1, kOrderedSumThreads, 0, stream_>>>(partials, chunks_, sum);
      FB_CHECK_CUDA(cudaGetLastError());
    } else {
      FB_CHECK_CUDA(cudaMemsetAsync(sum, 0, sizeof(double), stream_));
    }
    double out = 0;
    FB_CHECK_CUDA(cudaMemcpyAsync(&out, sum, sizeof(double), cudaMemcpyDeviceToHost, stream_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
    return out;
  }

 private:
  cudaStream_t stream_;
  DType type_;
  long long chunks_ = 0;
  int entries_ = 0;
  DeviceBuffer table_, sum_, partials_;  // partials_: one gradient sum of squares per chunk
};

}  // namespace

std::unique_ptr<MultiTensorAdam> make_cuda_multi_tensor_adam(Backend& backend,
                                                             std::vector<AdamTensor> tensors, DType type) {
  return std::make_unique<CudaMultiTensorAdam>(backend, std::move(tensors), type);
}

}  // namespace fb::kernels
