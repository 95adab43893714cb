// CUDA twins of kernels/host/train_kernels_host.cpp (same algorithms; the host versions are the reference in
// tests/gpu/moe_kernels_cuda_test.cpp). Compute in fp32; storage fp32 or bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "kernels/cuda/adam_element.cuh"
#include "kernels/cuda/block_kernels_cuda.hpp"
#include "kernels/cuda/cuda_elements.cuh"
#include "kernels/cuda/ordered_sum.cuh"
#include "kernels/cuda/train_kernels_cuda.hpp"

namespace fb::kernels {
namespace {

using namespace cuda_detail;

// One token's top-k of the softmax of its (biased) logits, renormalised over the k chosen.
template <typename T>
__device__ void route_token(const T* logits, long long t, long long experts, long long k, const float* bias,
                            int* idx, float* weight) {
  float mx = -INFINITY;
  for (long long e = 0; e < experts; ++e)
    mx = fmaxf(mx, ld(logits, t * experts + e) + (bias ? bias[e] : 0.0f));
  float sum = 0;
  for (long long e = 0; e < experts; ++e)
    sum += expf(ld(logits, t * experts + e) + (bias ? bias[e] : 0.0f) - mx);
  float selected = 0;
  for (long long j = 0; j < k; ++j) {
    long long best = -1;
    float best_p = 0;
    for (long long e = 0; e < experts; ++e) {
      bool taken = false;
      for (long long i = 0; i < j; ++i) taken = taken || idx[t * k + i] == e;
      const float p = expf(ld(logits, t * experts + e) + (bias ? bias[e] : 0.0f) - mx) / sum;
      if (!taken && (best < 0 || p > best_p)) {
        best = e;
        best_p = p;
      }
    }
    idx[t * k + j] = static_cast<int>(best);
    weight[t * k + j] = best_p;
    selected += best_p;
  }
  for (long long j = 0; j < k; ++j) weight[t * k + j] /= selected;
}

// A thread per token, striding by the grid: blocks_for caps the grid (at 268M threads), not the tokens.
template <typename T>
__global__ void route_topk_kernel(const T* logits, long long tokens, long long experts, long long k,
                                  const float* bias, int* idx, float* weight) {
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < tokens;
       t += static_cast<long long>(gridDim.x) * blockDim.x)
    route_token(logits, t, experts, k, bias, idx, weight);
}

template <typename T>
__global__ void topk_softmax_backward_kernel(const int* idx, const float* w, const float* dw,
                                             long long tokens, long long experts, long long k, T* d_logits) {
  for (long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; t < tokens;
       t += static_cast<long long>(gridDim.x) * blockDim.x) {
    for (long long e = 0; e < experts; ++e) st(d_logits, t * experts + e, 0.0f);
    float dot = 0;
    for (long long j = 0; j < k; ++j) dot += w[t * k + j] * dw[t * k + j];
    for (long long j = 0; j < k; ++j)
      st(d_logits, t * experts + idx[t * k + j], w[t * k + j] * (dw[t * k + j] - dot));
  }
}

// Stable counting sort in one block: thread e counts and places the slots of expert e in slot order.
__global__ void permutation_kernel(const int* idx, long long slots, long long experts, long long* counts,
                                   int* row_of_slot) {
  extern __shared__ long long offsets[];
  for (long long e = threadIdx.x; e < experts; e += blockDim.x) {
    long long c = 0;
    for (long long s = 0; s < slots; ++s) c += idx[s] == e ? 1 : 0;
    counts[e] = c;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    long long o = 0;
    for (long long e = 0; e < experts; ++e) {
      offsets[e] = o;
      o += counts[e];
    }
  }
  __syncthreads();
  for (long long e = threadIdx.x; e < experts; e += blockDim.x) {
    long long pos = offsets[e];
    for (long long s = 0; s < slots; ++s)
      if (idx[s] == e) row_of_slot[s] = static_cast<int>(pos++);
  }
}

template <typename T>
__global__ void permute_kernel(const T* x, long long k, long long width, const int* row_of_slot,
                               const float* w, T* out) {
  const long long slot = blockIdx.x;
  const long long t = slot / k, row = row_of_slot[slot];
  const float scale = w ? w[slot] : 1.0f;
  for (long long c = threadIdx.x; c < width; c += blockDim.x)
    st(out, row * width + c, scale * ld(x, t * width + c));
}

template <typename T>
__global__ void unpermute_kernel(const T* in, long long k, long long width, const int* row_of_slot,
                                 const float* w, T* y, bool accumulate) {
  const long long t = blockIdx.x;
  for (long long c = threadIdx.x; c < width; c += blockDim.x) {
    float acc = accumulate ? ld(y, t * width + c) : 0.0f;
    for (long long j = 0; j < k; ++j)
      acc += (w ? w[t * k + j] : 1.0f) * ld(in, static_cast<long long>(row_of_slot[t * k + j]) * width + c);
    st(y, t * width + c, acc);
  }
}

template <typename T>
__global__ void routing_weight_grad_kernel(const T* dy, const T* in, long long k, long long width,
                                           const int* row_of_slot, float* dw) {
  const long long slot = blockIdx.x, t = slot / k, row = row_of_slot[slot];
  float dot = 0;
  for (long long c = threadIdx.x; c < width; c += blockDim.x)
    dot += ld(dy, t * width + c) * ld(in, row * width + c);
  dot = block_reduce(dot, false);
  if (threadIdx.x == 0) dw[slot] = dot;
}

// One block per (strip, query column).
template <typename T>
__global__ void causal_softmax_kernel(T* scores, long long keys, long long queries, long long first_query,
                                      long long batch_stride, float scale) {
  const long long q = blockIdx.x % queries, b = blockIdx.x / queries;
  T* col = scores + b * batch_stride + q * keys;
  const long long visible = min(keys, first_query + q + 1);
  float mx = -INFINITY;
  for (long long i = threadIdx.x; i < visible; i += blockDim.x) mx = fmaxf(mx, scale * ld(col, i));
  mx = block_reduce(mx, true);
  float sum = 0;
  for (long long i = threadIdx.x; i < visible; i += blockDim.x) sum += expf(scale * ld(col, i) - mx);
  sum = block_reduce(sum, false);
  for (long long i = threadIdx.x; i < keys; i += blockDim.x)
    st(col, i, i < visible ? expf(scale * ld(col, i) - mx) / sum : 0.0f);
}

template <typename T>
__global__ void softmax_backward_kernel(const T* probs, T* d, long long keys, long long queries,
                                        long long batch_stride, float scale) {
  const long long q = blockIdx.x % queries, b = blockIdx.x / queries;
  const T* p = probs + b * batch_stride + q * keys;
  T* g = d + b * batch_stride + q * keys;
  float dot = 0;
  for (long long i = threadIdx.x; i < keys; i += blockDim.x) dot += ld(p, i) * ld(g, i);
  dot = block_reduce(dot, false);
  for (long long i = threadIdx.x; i < keys; i += blockDim.x) st(g, i, scale * ld(p, i) * (ld(g, i) - dot));
}

constexpr float kGeluC = 0.7978845608f;

template <typename T>
__global__ void activation_forward_kernel(bool swiglu, const T* up, long long f, long long n, T* out) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < f * n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long c = i / f, r = i % f;
    if (swiglu) {
      const float a = ld(up, c * 2 * f + r), b = ld(up, c * 2 * f + f + r);
      st(out, i, a / (1.0f + expf(-a)) * b);
    } else {
      const float x = ld(up, i);
      st(out, i, 0.5f * x * (1.0f + tanhf(kGeluC * (x + 0.044715f * x * x * x))));
    }
  }
}

template <typename T>
__global__ void activation_backward_kernel(bool swiglu, const T* up, const T* d_out, long long f, long long n,
                                           T* d_up) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < f * n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long c = i / f, r = i % f;
    const float dy = ld(d_out, i);
    if (swiglu) {
      const float a = ld(up, c * 2 * f + r), b = ld(up, c * 2 * f + f + r);
      const float sig = 1.0f / (1.0f + expf(-a));
      st(d_up, c * 2 * f + r, dy * b * sig * (1.0f + a * (1.0f - sig)));
      st(d_up, c * 2 * f + f + r, dy * a * sig);
    } else {
      const float x = ld(up, i);
      const float t = tanhf(kGeluC * (x + 0.044715f * x * x * x));
      st(d_up, i,
         dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x)));
    }
  }
}

template <typename T>
__global__ void scale_kernel(T* y, long long n, float alpha) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    st(y, i, alpha == 0.0f ? 0.0f : alpha * ld(y, i));
}

template <typename T>
__global__ void add_kernel(T* y, const T* x, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    st(y, i, ld(y, i) + ld(x, i));
}

template <typename T>
__global__ void adam_kernel(T* param, const T* grad, float* master, float* m, float* v, long long n, float lr,
                            float b1, float b2, float eps, float wd, float c1, float c2, float grad_scale) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float g = __fmul_rn(ld(grad, i), grad_scale);
    float w = master[i], mi = m[i], vi = v[i];
    adam_element_rn(w, mi, vi, g, b1, b2, eps, wd, c1, c2, lr);
    master[i] = w, m[i] = mi, v[i] = vi;
    st(param, i, w);
  }
}

// Σ x² in fp64 (as the host adds it), one partial per block for ordered_sum_kernel: a fixed grid of
// kSumSquaresBlocks, so the result repeats bit for bit.
constexpr unsigned kSumSquaresBlocks = 1024;
template <typename T>
__global__ void sum_squares_kernel(const T* x, long long n, double* partials) {
  double s = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const double v = ld(x, i);
    s += v * v;
  }
  s = block_sum_fixed_order(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <typename T>
__global__ void convert_kernel(const float* src, T* dst, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    st(dst, i, src[i]);
}

class CudaTrainKernels final : public TrainKernels {
 public:
  explicit CudaTrainKernels(Backend& backend) : stream_(static_cast<cudaStream_t>(backend.native_stream())) {
    FB_CHECK_CUDA(cudaMalloc(&scalar_, sizeof(double)));
    FB_CHECK_CUDA(cudaMalloc(&partials_, kSumSquaresBlocks * sizeof(double)));
  }
  ~CudaTrainKernels() override {
    cudaFree(scalar_);
    cudaFree(partials_);
    for (auto& [key, table] : rope_tables_) {
      cudaFree(table.first);
      cudaFree(table.second);
    }
  }

  void route_topk(const void* logits, DType type, std::int64_t tokens, std::int64_t experts, std::int64_t k,
                  const float* bias, std::int32_t* idx, float* w) override {
    dispatch(type, [&](auto* tag) {
      route_topk_kernel<<<blocks_for(tokens), kThreads, 0, stream_>>>(static_cast<const FB_ELEM_T*>(logits),
                                                                      tokens, experts, k, bias, idx, w);
    });
    check();
  }
  void topk_softmax_backward(const std::int32_t* idx, const float* w, const float* dw, std::int64_t tokens,
                             std::int64_t experts, std::int64_t k, void* d_logits, DType type) override {
    dispatch(type, [&](auto* tag) {
      topk_softmax_backward_kernel<<<blocks_for(tokens), kThreads, 0, stream_>>>(
          idx, w, dw, tokens, experts, k, static_cast<FB_ELEM_T*>(d_logits));
    });
    check();
  }
  void build_permutation(const std::int32_t* idx, std::int64_t slots, std::int64_t experts,
                         std::int64_t* counts, std::int32_t* row_of_slot,
                         std::int64_t* host_counts) override {
    permutation_kernel<<<1, 1024, static_cast<std::size_t>(experts) * sizeof(long long), stream_>>>(
        idx, slots, experts, reinterpret_cast<long long*>(counts), row_of_slot);
    check();
    FB_CHECK_CUDA(cudaMemcpyAsync(host_counts, counts, static_cast<std::size_t>(experts) * 8,
                                  cudaMemcpyDeviceToHost, stream_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  void permute(const void* x, DType type, std::int64_t tokens, std::int64_t k, std::int64_t width,
               const std::int32_t* row_of_slot, const float* w, void* out) override {
    if (tokens * k == 0) return;
    dispatch(type, [&](auto* tag) {
      permute_kernel<<<static_cast<unsigned>(tokens * k), kThreads, 0, stream_>>>(
          static_cast<const FB_ELEM_T*>(x), k, width, row_of_slot, w, static_cast<FB_ELEM_T*>(out));
    });
    check();
  }
  void unpermute(const void* in, DType type, std::int64_t tokens, std::int64_t k, std::int64_t width,
                 const std::int32_t* row_of_slot, const float* w, void* y, bool accumulate) override {
    if (tokens == 0) return;
    dispatch(type, [&](auto* tag) {
      unpermute_kernel<<<static_cast<unsigned>(tokens), kThreads, 0, stream_>>>(
          static_cast<const FB_ELEM_T*>(in), k, width, row_of_slot, w, static_cast<FB_ELEM_T*>(y),
          accumulate);
    });
    check();
  }
  void routing_weight_grad(const void* dy, const void* in, DType type, std::int64_t tokens, std::int64_t k,
                           std::int64_t width, const std::int32_t* row_of_slot, float* dw) override {
    if (tokens * k == 0) return;
    dispatch(type, [&](auto* tag) {
      routing_weight_grad_kernel<<<static_cast<unsigned>(tokens * k), kThreads, 0, stream_>>>(
          static_cast<const FB_ELEM_T*>(dy), static_cast<const FB_ELEM_T*>(in), k, width, row_of_slot, dw);
    });
    check();
  }
  void causal_softmax(void* scores, DType type, std::int64_t keys, std::int64_t queries,
                      std::int64_t first_query, std::int64_t batch, std::int64_t batch_stride,
                      float scale) override {
    if (queries * batch == 0) return;  // an empty grid is a launch error; the host does nothing
    dispatch(type, [&](auto* tag) {
      causal_softmax_kernel<<<static_cast<unsigned>(queries * batch), kThreads, 0, stream_>>>(
          static_cast<FB_ELEM_T*>(scores), keys, queries, first_query, batch_stride, scale);
    });
    check();
  }
  void softmax_backward(const void* probs, void* d, DType type, std::int64_t keys, std::int64_t queries,
                        std::int64_t batch, std::int64_t batch_stride, float scale) override {
    if (queries * batch == 0) return;
    dispatch(type, [&](auto* tag) {
      softmax_backward_kernel<<<static_cast<unsigned>(queries * batch), kThreads, 0, stream_>>>(
          static_cast<const FB_ELEM_T*>(probs), static_cast<FB_ELEM_T*>(d), keys, queries, batch_stride,
          scale);
    });
    check();
  }
  void activation_forward(bool swiglu, const void* up, DType type, std::int64_t f, std::int64_t n,
                          void* out) override {
    if (f * n == 0) return;
    dispatch(type, [&](auto* tag) {
      activation_forward_kernel<<<blocks_for(f * n), kThreads, 0, stream_>>>(
          swiglu, static_cast<const FB_ELEM_T*>(up), f, n, static_cast<FB_ELEM_T*>(out));
    });
    check();
  }
  void activation_backward(bool swiglu, const void* up, const void* d_out, DType type, std::int64_t f,
                           std::int64_t n, void* d_up) override {
    if (f * n == 0) return;
    dispatch(type, [&](auto* tag) {
      activation_backward_kernel<<<blocks_for(f * n), kThreads, 0, stream_>>>(
          swiglu, static_cast<const FB_ELEM_T*>(up), static_cast<const FB_ELEM_T*>(d_out), f, n,
          static_cast<FB_ELEM_T*>(d_up));
    });
    check();
  }
  void scale(void* y, DType type, std::int64_t count, float alpha) override {
    if (count == 0) return;
    dispatch(type, [&](auto* tag) {
      scale_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(static_cast<FB_ELEM_T*>(y), count, alpha);
    });
    check();
  }
  void add(void* y, const void* x, DType type, std::int64_t count) override {
    if (count == 0) return;
    dispatch(type, [&](auto* tag) {
      add_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(static_cast<FB_ELEM_T*>(y),
                                                              static_cast<const FB_ELEM_T*>(x), count);
    });
    check();
  }
  void copy_row_blocks(const void* src, void* dst, DType type, std::int64_t width, std::int64_t blocks,
                       const std::int64_t* src_row, const std::int64_t* dst_row,
                       const std::int64_t* rows) override {
    const std::size_t row_bytes = dtype_bytes(type) * static_cast<std::size_t>(width);
    for (std::int64_t b = 0; b < blocks; ++b)
      if (rows[b] > 0)
        FB_CHECK_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + dst_row[b] * row_bytes,
                                      static_cast<const char*>(src) + src_row[b] * row_bytes,
                                      row_bytes * static_cast<std::size_t>(rows[b]), cudaMemcpyDeviceToDevice,
                                      stream_));
  }
  void rmsnorm_forward(const void* x, const void* delta, void* sum, const void* gamma, void* y, float* rstd,
                       DType type, std::int64_t rows, std::int64_t width, std::int64_t ld,
                       float eps) override {
    cuda_detail::rmsnorm_forward(stream_, x, delta, sum, gamma, y, rstd, type, rows, width, ld, eps);
  }
  void rmsnorm_backward(const void* dy, const void* s, const void* gamma, const float* rstd,
                        const void* d_residual, void* dx, void* d_gamma, DType type, std::int64_t rows,
                        std::int64_t width, std::int64_t ld) override {
    cuda_detail::rmsnorm_backward(stream_, scratch_, dy, s, gamma, rstd, d_residual, dx, d_gamma, type, rows,
                                  width, ld);
  }
  void rope(void* x, DType type, std::int64_t rows, std::int64_t ld, std::int64_t col0, std::int64_t heads,
            std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq, float theta,
            bool inverse) override {
    const auto& table = rope_table(rot_dim, std::min(seq, rows), theta);
    cuda_detail::rope(stream_, x, type, rows, ld, col0, heads, head_stride, rot_dim, seq, table.first,
                      table.second, inverse);
  }
  void embedding_forward(const void* table, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                         std::int64_t width, const std::int32_t* ids, std::int64_t tokens,
                         void* out) override {
    cuda_detail::embedding_forward(stream_, table, type, vocab_begin, vocab_rows, width, ids, tokens, out);
  }
  void embedding_backward(const void* d_out, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                          std::int64_t width, const std::int32_t* ids, std::int64_t tokens,
                          void* grad) override {
    cuda_detail::embedding_backward(stream_, scratch_, d_out, type, vocab_begin, vocab_rows, width, ids,
                                    tokens, grad);
  }
  void copy_heads(const void* src, std::int64_t ld_src, std::int64_t src_col0, std::int64_t src_stride,
                  void* dst, std::int64_t ld_dst, std::int64_t dst_col0, std::int64_t dst_stride, DType type,
                  std::int64_t rows, std::int64_t heads, std::int64_t width, bool accumulate) override {
    cuda_detail::copy_heads(stream_, src, ld_src, src_col0, src_stride, dst, ld_dst, dst_col0, dst_stride,
                            type, rows, heads, width, accumulate);
  }
  void adam_update(void* param, const void* grad, DType type, float* master, float* m, float* v,
                   std::int64_t count, const AdamParams& p) override {
    if (count == 0) return;
    const float c1 = 1.0f - std::pow(p.beta1, static_cast<float>(p.step));
    const float c2 = 1.0f - std::pow(p.beta2, static_cast<float>(p.step));
    dispatch(type, [&](auto* tag) {
      adam_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(
          static_cast<FB_ELEM_T*>(param), static_cast<const FB_ELEM_T*>(grad), master, m, v, count, p.lr,
          p.beta1, p.beta2, p.eps, p.weight_decay, c1, c2, p.grad_scale);
    });
    check();
  }
  double sum_squares(const void* x, DType type, std::int64_t count) override {
    if (count > 0) {
      dispatch(type, [&](auto* tag) {
        sum_squares_kernel<<<kSumSquaresBlocks, kThreads, 0, stream_>>>(static_cast<const FB_ELEM_T*>(x),
                                                                        count, partials_);
      });
      check();
      ordered_sum_kernel<<<1, kOrderedSumThreads, 0, stream_>>>(partials_, kSumSquaresBlocks, scalar_);
    } else {
      FB_CHECK_CUDA(cudaMemsetAsync(scalar_, 0, sizeof(double), stream_));
    }
    check();
    double out = 0;
    FB_CHECK_CUDA(cudaMemcpyAsync(&out, scalar_, sizeof(double), cudaMemcpyDeviceToHost, stream_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
    return out;
  }
  void convert_from_fp32(const float* src, void* dst, DType type, std::int64_t count) override {
    if (count == 0) return;
    dispatch(type, [&](auto* tag) {
      convert_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(src, static_cast<FB_ELEM_T*>(dst), count);
    });
    check();
  }

 private:
  static void check() { FB_CHECK_CUDA(cudaGetLastError()); }
  // The device copy of rope_table(rot_dim, seq, theta) (cos, sin), uploaded once per (rot_dim, seq, theta).
  const std::pair<float*, float*>& rope_table(std::int64_t rot_dim, std::int64_t seq, float theta) {
    const auto key = std::make_tuple(rot_dim, seq, theta);
    auto it = rope_tables_.find(key);
    if (it == rope_tables_.end()) {
      const auto table = kernels::rope_table(rot_dim, seq, theta);
      const std::size_t bytes = std::max<std::size_t>(1, table.cos.size()) * sizeof(float);
      float *c = nullptr, *s = nullptr;
      FB_CHECK_CUDA(cudaMalloc(&c, bytes));
      FB_CHECK_CUDA(cudaMalloc(&s, bytes));
      // On the kernels' stream, which does not wait for the legacy default stream (cudaStreamNonBlocking): a
      // plain cudaMemcpy from pageable memory may return before the data lands, and the first rope kernel
      // would read a half-written table. Synchronised because `table` is freed on return.
      FB_CHECK_CUDA(cudaMemcpyAsync(c, table.cos.data(), table.cos.size() * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
      FB_CHECK_CUDA(cudaMemcpyAsync(s, table.sin.data(), table.sin.size() * sizeof(float),
                                    cudaMemcpyHostToDevice, stream_));
      FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
      it = rope_tables_.emplace(key, std::make_pair(c, s)).first;
    }
    return it->second;
  }
  cudaStream_t stream_;
  double* scalar_ = nullptr;
  double* partials_ = nullptr;  // sum_squares: one partial per block
  cuda_detail::Scratch scratch_{stream_};
  std::map<std::tuple<std::int64_t, std::int64_t, float>, std::pair<float*, float*>> rope_tables_;
};

}  // namespace

std::unique_ptr<TrainKernels> make_cuda_train_kernels(Backend& backend) {
  return std::make_unique<CudaTrainKernels>(backend);
}

}  // namespace fb::kernels
