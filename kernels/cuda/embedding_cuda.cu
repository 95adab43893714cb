// The vocabulary-parallel embedding lookup and its scatter-add on the GPU; the host twin is
// kernels/host/embedding_host.cpp. The backward pass sorts (id, token) pairs with CUB's stable radix sort and
// lets the first token of each run of equal ids sum the run's gradient rows in token order and add them to
// the row once: deterministic, with no atomics (the approach of PyTorch's sort-based embedding backward).
#include <cuda_runtime.h>
#include <cub/device/device_radix_sort.cuh>

#include "core/cuda_check.hpp"
#include "kernels/cuda/block_kernels_cuda.hpp"
#include "kernels/cuda/cuda_elements.cuh"

namespace fb::kernels::cuda_detail {
namespace {

template <typename T>
__global__ void embedding_forward_kernel(const T* table, long long vocab_begin, long long vocab_rows,
                                         long long width, const int* ids, T* out) {
  const long long t = blockIdx.x, v = ids[t] - vocab_begin;
  const bool here = v >= 0 && v < vocab_rows;
  for (long long c = threadIdx.x; c < width; c += blockDim.x)
    st(out, t * width + c, here ? ld(table, v * width + c) : 0.0f);
}

__global__ void iota_kernel(int* out, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = static_cast<int>(i);
}

// Block i: when sorted position i starts a run of equal ids, sums the run's rows and adds them to the row.
template <typename T>
__global__ void embedding_backward_kernel(const T* d_out, long long vocab_begin, long long vocab_rows,
                                          long long width, const int* sorted_ids, const int* sorted_tokens,
                                          long long tokens, T* grad) {
  const long long i = blockIdx.x;
  const int id = sorted_ids[i];
  if (i > 0 && sorted_ids[i - 1] == id) return;
  const long long v = id - vocab_begin;
  if (v < 0 || v >= vocab_rows) return;
  for (long long c = threadIdx.x; c < width; c += blockDim.x) {
    float acc = 0;
    for (long long j = i; j < tokens && sorted_ids[j] == id; ++j)
      acc += ld(d_out, sorted_tokens[j] * width + c);
    st(grad, v * width + c, ld(grad, v * width + c) + acc);
  }
}

std::size_t align256(std::size_t n) {
  return (n + 255) / 256 * 256;
}

}  // namespace

void embedding_forward(void* stream, const void* table, DType type, std::int64_t vocab_begin,
                       std::int64_t vocab_rows, std::int64_t width, const std::int32_t* ids,
                       std::int64_t tokens, void* out) {
  if (tokens == 0) return;
  dispatch(type, [&](auto* tag) {
    embedding_forward_kernel<<<static_cast<unsigned>(tokens), kThreads, 0,
                               static_cast<cudaStream_t>(stream)>>>(static_cast<const FB_ELEM_T*>(table),
                                                                    vocab_begin, vocab_rows, width, ids,
                                                                    static_cast<FB_ELEM_T*>(out));
  });
  FB_CHECK_CUDA(cudaGetLastError());
}

void embedding_backward(void* stream, Scratch& scratch, const void* d_out, DType type,
                        std::int64_t vocab_begin, std::int64_t vocab_rows, std::int64_t width,
                        const std::int32_t* ids, std::int64_t tokens, void* grad) {
  if (tokens == 0) return;
  auto s = static_cast<cudaStream_t>(stream);
  const int n = static_cast<int>(tokens);
  std::size_t sort_bytes = 0;
  FB_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const int*>(nullptr),
                                                static_cast<int*>(nullptr), static_cast<const int*>(nullptr),
                                                static_cast<int*>(nullptr), n, 0, 32, s));
  const std::size_t ints = align256(static_cast<std::size_t>(n) * sizeof(int));
  char* base = static_cast<char*>(scratch.get(3 * ints + sort_bytes));
  int* tokens_in = reinterpret_cast<int*>(base);
  int* sorted_ids = reinterpret_cast<int*>(base + ints);
  int* sorted_tokens = reinterpret_cast<int*>(base + 2 * ints);
  iota_kernel<<<blocks_for(tokens), kThreads, 0, s>>>(tokens_in, tokens);
  FB_CHECK_CUDA(cub::DeviceRadixSort::SortPairs(base + 3 * ints, sort_bytes, ids, sorted_ids, tokens_in,
                                                sorted_tokens, n, 0, 32, s));
  dispatch(type, [&](auto* tag) {
    embedding_backward_kernel<<<static_cast<unsigned>(tokens), kThreads, 0, s>>>(
        static_cast<const FB_ELEM_T*>(d_out), vocab_begin, vocab_rows, width, sorted_ids, sorted_tokens,
        tokens, static_cast<FB_ELEM_T*>(grad));
  });
  FB_CHECK_CUDA(cudaGetLastError());
}

}  // namespace fb::kernels::cuda_detail
