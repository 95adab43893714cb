#pragma once
// Host implementations of the transformer-block kernels of kernels/train_kernels.hpp (RMSNorm with its fused
// residual add, rotary embedding, the vocabulary-parallel embedding lookup and its scatter-add, head-block
// copies). HostTrainKernels forwards to these; the contracts are the interface's.
#include <cstdint>

#include "core/dtype.hpp"

namespace fb::kernels::host {

void rmsnorm_forward(const void* x, const void* delta, void* sum, const void* gamma, void* y, float* rstd,
                     DType type, std::int64_t rows, std::int64_t width, std::int64_t ld, float eps);
void rmsnorm_backward(const void* dy, const void* s, const void* gamma, const float* rstd,
                      const void* d_residual, void* dx, void* d_gamma, DType type, std::int64_t rows,
                      std::int64_t width, std::int64_t ld);

void rope(void* x, DType type, std::int64_t rows, std::int64_t ld, std::int64_t col0, std::int64_t heads,
          std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq, float theta, bool inverse);

void embedding_forward(const void* table, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                       std::int64_t width, const std::int32_t* ids, std::int64_t tokens, void* out);
void embedding_backward(const void* d_out, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                        std::int64_t width, const std::int32_t* ids, std::int64_t tokens, void* grad);

void copy_heads(const void* src, std::int64_t ld_src, std::int64_t src_col0, std::int64_t src_stride,
                void* dst, std::int64_t ld_dst, std::int64_t dst_col0, std::int64_t dst_stride, DType type,
                std::int64_t rows, std::int64_t heads, std::int64_t width, bool accumulate);

}  // namespace fb::kernels::host
