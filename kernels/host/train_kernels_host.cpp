#include "kernels/host/train_kernels_host.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"
#include "kernels/host/block_kernels_host.hpp"
#include "kernels/host/host_elements.hpp"

namespace fb::kernels {
namespace {

using host::Bf16;
using host::cp;
using host::dispatch;
using host::ld;
using host::mp;
using host::st;

inline float silu(float x) {
  return x / (1.0f + std::exp(-x));
}
// GeLU, tanh approximation (as Megatron's bias_gelu): 0.5x(1 + tanh(√(2/π)(x + 0.044715x³))).
constexpr float kGeluC = 0.7978845608f;
inline float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x)));
}
inline float gelu_grad(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
}

class HostTrainKernels final : public TrainKernels {
 public:
  void route_topk(const void* logits, DType type, std::int64_t tokens, std::int64_t experts, std::int64_t k,
                  const float* bias, std::int32_t* expert_idx, float* weight) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* in = cp<T>(logits);
      std::vector<float> prob(static_cast<std::size_t>(experts));
      for (std::int64_t t = 0; t < tokens; ++t) {
        float mx = -std::numeric_limits<float>::infinity();
        for (std::int64_t e = 0; e < experts; ++e) {
          prob[e] = ld(in, t * experts + e) + (bias ? bias[e] : 0.0f);
          mx = std::max(mx, prob[e]);
        }
        float sum = 0;
        for (auto& p : prob) sum += (p = std::exp(p - mx));
        for (auto& p : prob) p /= sum;
        // k rounds of arg-max (k is small): the same selection order the CUDA kernel uses.
        float selected = 0;
        for (std::int64_t j = 0; j < k; ++j) {
          std::int64_t best = -1;
          for (std::int64_t e = 0; e < experts; ++e) {
            bool taken = false;
            for (std::int64_t i = 0; i < j; ++i) taken = taken || expert_idx[t * k + i] == e;
            if (!taken && (best < 0 || prob[e] > prob[best])) best = e;
          }
          expert_idx[t * k + j] = static_cast<std::int32_t>(best);
          weight[t * k + j] = prob[best];
          selected += prob[best];
        }
        for (std::int64_t j = 0; j < k; ++j) weight[t * k + j] /= selected;
      }
    });
  }

  void topk_softmax_backward(const std::int32_t* expert_idx, const float* weight, const float* d_weight,
                             std::int64_t tokens, std::int64_t experts, std::int64_t k, void* d_logits,
                             DType type) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* o = mp<T>(d_logits);
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (std::int64_t e = 0; e < experts; ++e) st(o, t * experts + e, 0.0f);
        float dot = 0;
        for (std::int64_t j = 0; j < k; ++j) dot += weight[t * k + j] * d_weight[t * k + j];
        for (std::int64_t j = 0; j < k; ++j)
          st(o, t * experts + expert_idx[t * k + j], weight[t * k + j] * (d_weight[t * k + j] - dot));
      }
    });
  }

  void build_permutation(const std::int32_t* expert_idx, std::int64_t slots, std::int64_t experts,
                         std::int64_t* counts, std::int32_t* row_of_slot,
                         std::int64_t* host_counts) override {
    std::vector<std::int64_t> next(static_cast<std::size_t>(experts), 0);
    std::fill(counts, counts + experts, 0);
    for (std::int64_t s = 0; s < slots; ++s) {
      const auto e = expert_idx[s];
      if (e < 0 || e >= experts) throw runtime_error("build_permutation: expert index out of range");
      ++counts[e];
    }
    std::int64_t offset = 0;
    for (std::int64_t e = 0; e < experts; ++e) {
      next[e] = offset;
      offset += counts[e];
    }
    for (std::int64_t s = 0; s < slots; ++s)
      row_of_slot[s] = static_cast<std::int32_t>(next[expert_idx[s]]++);
    if (host_counts != counts) std::copy(counts, counts + experts, host_counts);
  }

  void permute(const void* x, DType type, std::int64_t tokens, std::int64_t k, std::int64_t width,
               const std::int32_t* row_of_slot, const float* weight, void* out) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* in = cp<T>(x);
      T* o = mp<T>(out);
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t row = row_of_slot[t * k + j];
          if (!weight) {
            std::memcpy(o + row * width, in + t * width, sizeof(T) * static_cast<std::size_t>(width));
            continue;
          }
          const float w = weight[t * k + j];
          for (std::int64_t c = 0; c < width; ++c) st(o, row * width + c, w * ld(in, t * width + c));
        }
    });
  }

  void unpermute(const void* in, DType type, std::int64_t tokens, std::int64_t k, std::int64_t width,
                 const std::int32_t* row_of_slot, const float* weight, void* y, bool accumulate) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* src = cp<T>(in);
      T* o = mp<T>(y);
      std::vector<float> acc(static_cast<std::size_t>(width));
      for (std::int64_t t = 0; t < tokens; ++t) {
        for (std::int64_t c = 0; c < width; ++c) acc[c] = accumulate ? ld(o, t * width + c) : 0.0f;
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t row = row_of_slot[t * k + j];
          const float w = weight ? weight[t * k + j] : 1.0f;
          for (std::int64_t c = 0; c < width; ++c) acc[c] += w * ld(src, row * width + c);
        }
        for (std::int64_t c = 0; c < width; ++c) st(o, t * width + c, acc[c]);
      }
    });
  }

  void routing_weight_grad(const void* dy, const void* in, DType type, std::int64_t tokens, std::int64_t k,
                           std::int64_t width, const std::int32_t* row_of_slot, float* d_weight) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* g = cp<T>(dy);
      const T* src = cp<T>(in);
      for (std::int64_t t = 0; t < tokens; ++t)
        for (std::int64_t j = 0; j < k; ++j) {
          const std::int64_t row = row_of_slot[t * k + j];
          float dot = 0;
          for (std::int64_t c = 0; c < width; ++c) dot += ld(g, t * width + c) * ld(src, row * width + c);
          d_weight[t * k + j] = dot;
        }
    });
  }

  void causal_softmax(void* scores, DType type, std::int64_t keys, std::int64_t queries,
                      std::int64_t first_query, std::int64_t batch, std::int64_t batch_stride,
                      float scale) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      for (std::int64_t b = 0; b < batch; ++b) {
        T* s = mp<T>(scores) + b * batch_stride;
        for (std::int64_t q = 0; q < queries; ++q) {
          const std::int64_t visible = std::min(keys, first_query + q + 1);
          T* col = s + q * keys;
          float mx = -std::numeric_limits<float>::infinity();
          for (std::int64_t i = 0; i < visible; ++i) mx = std::max(mx, scale * ld(col, i));
          float sum = 0;
          for (std::int64_t i = 0; i < visible; ++i) sum += std::exp(scale * ld(col, i) - mx);
          for (std::int64_t i = 0; i < visible; ++i) st(col, i, std::exp(scale * ld(col, i) - mx) / sum);
          for (std::int64_t i = visible; i < keys; ++i) st(col, i, 0.0f);
        }
      }
    });
  }

  void softmax_backward(const void* probs, void* d, DType type, std::int64_t keys, std::int64_t queries,
                        std::int64_t batch, std::int64_t batch_stride, float scale) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t q = 0; q < queries; ++q) {
          const T* p = cp<T>(probs) + b * batch_stride + q * keys;
          T* g = mp<T>(d) + b * batch_stride + q * keys;
          float dot = 0;
          for (std::int64_t i = 0; i < keys; ++i) dot += ld(p, i) * ld(g, i);
          for (std::int64_t i = 0; i < keys; ++i) st(g, i, scale * ld(p, i) * (ld(g, i) - dot));
        }
    });
  }

  void activation_forward(bool swiglu, const void* up, DType type, std::int64_t f, std::int64_t n,
                          void* out) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* u = cp<T>(up);
      T* o = mp<T>(out);
      for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t r = 0; r < f; ++r) {
          if (swiglu)
            st(o, c * f + r, silu(ld(u, c * 2 * f + r)) * ld(u, c * 2 * f + f + r));
          else
            st(o, c * f + r, gelu(ld(u, c * f + r)));
        }
    });
  }

  void activation_backward(bool swiglu, const void* up, const void* d_out, DType type, std::int64_t f,
                           std::int64_t n, void* d_up) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* u = cp<T>(up);
      const T* g = cp<T>(d_out);
      T* o = mp<T>(d_up);
      for (std::int64_t c = 0; c < n; ++c)
        for (std::int64_t r = 0; r < f; ++r) {
          const float dy = ld(g, c * f + r);
          if (swiglu) {
            const float a = ld(u, c * 2 * f + r), b = ld(u, c * 2 * f + f + r);
            const float sig = 1.0f / (1.0f + std::exp(-a));
            st(o, c * 2 * f + r, dy * b * sig * (1.0f + a * (1.0f - sig)));
            st(o, c * 2 * f + f + r, dy * a * sig);
          } else {
            st(o, c * f + r, dy * gelu_grad(ld(u, c * f + r)));
          }
        }
    });
  }

  void scale(void* y, DType type, std::int64_t count, float alpha) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* o = mp<T>(y);
      for (std::int64_t i = 0; i < count; ++i) st(o, i, alpha == 0.0f ? 0.0f : alpha * ld(o, i));
    });
  }

  void add(void* y, const void* x, DType type, std::int64_t count) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* o = mp<T>(y);
      const T* in = cp<T>(x);
      for (std::int64_t i = 0; i < count; ++i) st(o, i, ld(o, i) + ld(in, i));
    });
  }

  void rmsnorm_forward(const void* x, const void* delta, void* sum, const void* gamma, void* y, float* rstd,
                       DType type, std::int64_t rows, std::int64_t width, std::int64_t ld,
                       float eps) override {
    host::rmsnorm_forward(x, delta, sum, gamma, y, rstd, type, rows, width, ld, eps);
  }
  void rmsnorm_backward(const void* dy, const void* s, const void* gamma, const float* rstd,
                        const void* d_residual, void* dx, void* d_gamma, DType type, std::int64_t rows,
                        std::int64_t width, std::int64_t ld) override {
    host::rmsnorm_backward(dy, s, gamma, rstd, d_residual, dx, d_gamma, type, rows, width, ld);
  }
  void rope(void* x, DType type, std::int64_t rows, std::int64_t ld, std::int64_t col0, std::int64_t heads,
            std::int64_t head_stride, std::int64_t rot_dim, std::int64_t seq, float theta,
            bool inverse) override {
    host::rope(x, type, rows, ld, col0, heads, head_stride, rot_dim, seq, theta, inverse);
  }
  void embedding_forward(const void* table, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                         std::int64_t width, const std::int32_t* ids, std::int64_t tokens,
                         void* out) override {
    host::embedding_forward(table, type, vocab_begin, vocab_rows, width, ids, tokens, out);
  }
  void embedding_backward(const void* d_out, DType type, std::int64_t vocab_begin, std::int64_t vocab_rows,
                          std::int64_t width, const std::int32_t* ids, std::int64_t tokens,
                          void* grad) override {
    host::embedding_backward(d_out, type, vocab_begin, vocab_rows, width, ids, tokens, grad);
  }
  void copy_heads(const void* src, std::int64_t ld_src, std::int64_t src_col0, std::int64_t src_stride,
                  void* dst, std::int64_t ld_dst, std::int64_t dst_col0, std::int64_t dst_stride, DType type,
                  std::int64_t rows, std::int64_t heads, std::int64_t width, bool accumulate) override {
    host::copy_heads(src, ld_src, src_col0, src_stride, dst, ld_dst, dst_col0, dst_stride, type, rows, heads,
                     width, accumulate);
  }

  void copy_row_blocks(const void* src, void* dst, DType type, std::int64_t width, std::int64_t blocks,
                       const std::int64_t* src_row, const std::int64_t* dst_row,
                       const std::int64_t* rows) override {
    const std::size_t row_bytes = dtype_bytes(type) * static_cast<std::size_t>(width);
    for (std::int64_t b = 0; b < blocks; ++b)
      if (rows[b] > 0)
        std::memmove(static_cast<char*>(dst) + dst_row[b] * row_bytes,
                     static_cast<const char*>(src) + src_row[b] * row_bytes,
                     row_bytes * static_cast<std::size_t>(rows[b]));
  }

  void adam_update(void* param, const void* grad, DType type, float* master, float* m, float* v,
                   std::int64_t count, const AdamParams& p) override {
    const float c1 = 1.0f - std::pow(p.beta1, static_cast<float>(p.step));
    const float c2 = 1.0f - std::pow(p.beta2, static_cast<float>(p.step));
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* w = mp<T>(param);
      const T* g = cp<T>(grad);
      for (std::int64_t i = 0; i < count; ++i) {
        const float gi = ld(g, i) * p.grad_scale;
        m[i] = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
        v[i] = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
        const float update = (m[i] / c1) / (std::sqrt(v[i] / c2) + p.eps) + p.weight_decay * master[i];
        master[i] -= p.lr * update;
        st(w, i, master[i]);
      }
    });
  }

  double sum_squares(const void* x, DType type, std::int64_t count) override {
    double s = 0;
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* in = cp<T>(x);
      for (std::int64_t i = 0; i < count; ++i) {
        const double vi = ld(in, i);
        s += vi * vi;
      }
    });
    return s;
  }

  void convert_from_fp32(const float* src, void* dst, DType type, std::int64_t count) override {
    dispatch(type, [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      T* o = mp<T>(dst);
      for (std::int64_t i = 0; i < count; ++i) st(o, i, src[i]);
    });
  }
};

}  // namespace

std::unique_ptr<TrainKernels> make_host_train_kernels() {
  return std::make_unique<HostTrainKernels>();
}

}  // namespace fb::kernels
