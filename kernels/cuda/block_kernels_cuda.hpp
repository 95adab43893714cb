#pragma once
// CUDA launchers of the transformer-block kernels of kernels/train_kernels.hpp (RMSNorm with its fused
// residual add, rotary embedding, the vocabulary-parallel embedding and its scatter-add, head-block copies),
// enqueued on `stream` (a cudaStream_t). CudaTrainKernels forwards to these; the contracts are the
// interface's. No CUDA types here.
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>

#include "core/dtype.hpp"

namespace fb::kernels::cuda_detail {

// Device memory that grows on demand; before it replaces a smaller buffer it waits for the stream, so work
// still reading the old one finishes first. Growth happens in a run's first step only.
class Scratch {
 public:
  explicit Scratch(void* stream) : stream_(stream) {}
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get(std::size_t bytes);

 private:
  void* stream_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

void rmsnorm_forward(void* stream, const void* x, const void* delta, void* sum, const void* gamma, void* y,
                     float* rstd, DType type, std::int64_t rows, std::int64_t width, std::int64_t ld,
                     float eps);
void rmsnorm_backward(void* stream, Scratch& scratch, const void* dy, const void* s, const void* gamma,
                      const float* rstd, const void* d_residual, void* dx, void* d_gamma, DType type,
                      std::int64_t rows, std::int64_t width, std::int64_t ld);

// cos_table, sin_table: device copies of rope_table(rot_dim, seq, θ).
void rope(void* stream, void* x, DType type, std::int64_t rows, std::int64_t ld, std::int64_t col0,
          std::int64_t heads, std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq,
          const float* cos_table, const float* sin_table, bool inverse);

void embedding_forward(void* stream, const void* table, DType type, std::int64_t vocab_begin,
                       std::int64_t vocab_rows, std::int64_t width, const std::int32_t* ids,
                       std::int64_t tokens, void* out);
void embedding_backward(void* stream, Scratch& scratch, const void* d_out, DType type,
                        std::int64_t vocab_begin, std::int64_t vocab_rows, std::int64_t width,
                        const std::int32_t* ids, std::int64_t tokens, void* grad);

void copy_heads(void* stream, const void* src, std::int64_t ld_src, std::int64_t src_col0,
                std::int64_t src_stride, void* dst, std::int64_t ld_dst, std::int64_t dst_col0,
                std::int64_t dst_stride, DType type, std::int64_t rows, std::int64_t heads,
                std::int64_t width, bool accumulate);

}  // namespace fb::kernels::cuda_detail
