// RMSNorm forward (with the residual add fused in front) and backward on the host: the reference of
// kernels/cuda/rmsnorm_cuda.cu. Zhang & Sennrich, "Root Mean Square Layer Normalization", NeurIPS 2019:
// y = x / sqrt(mean(x²) + ε) · γ. Backward with x̂ = x·rstd and g = dy·γ:
// dx = rstd · (g − x̂ · mean(g·x̂)), dγ = Σ_rows dy·x̂.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/host/block_kernels_host.hpp"
#include "kernels/host/host_elements.hpp"
#include "kernels/train_kernels.hpp"

namespace fb::kernels::host {

void rmsnorm_forward(const void* x, const void* delta, void* sum, const void* gamma, void* y, float* rstd,
                     DType type, std::int64_t rows, std::int64_t width, std::int64_t pitch, float eps) {
  dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* in = cp<T>(x);
    const T* d = cp<T>(delta);
    T* s = mp<T>(sum);
    const T* g = cp<T>(gamma);
    T* out = mp<T>(y);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t row = r * pitch;
      float squares = 0;
      for (std::int64_t c = 0; c < width; ++c) {
        float v = ld(in, row + c);
        if (d) {  // the residual add, stored in the step's type; the norm reads the stored value
          st(s, row + c, v + ld(d, row + c));
          v = ld(s, row + c);
        }
        squares += v * v;
      }
      const float inv = 1.0f / std::sqrt(squares / static_cast<float>(width) + eps);
      rstd[r] = inv;
      const T* src = d ? s : in;
      for (std::int64_t c = 0; c < width; ++c) st(out, row + c, ld(src, row + c) * inv * ld(g, c));
    }
  });
}

void rmsnorm_backward(const void* dy, const void* s, const void* gamma, const float* rstd,
                      const void* d_residual, void* dx, void* d_gamma, DType type, std::int64_t rows,
                      std::int64_t width, std::int64_t pitch) {
  dispatch(type, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    const T* gy = cp<T>(dy);
    const T* x = cp<T>(s);
    const T* g = cp<T>(gamma);
    const T* res = cp<T>(d_residual);
    T* out = mp<T>(dx);
    // dγ first (dx may alias d_residual but never dy or s): fp32 column sums over blocks of kNormRowBlock
    // rows, the blocks added in order, as the CUDA kernels do.
    std::vector<float> total(static_cast<std::size_t>(width), 0.0f), part(static_cast<std::size_t>(width));
    for (std::int64_t b = 0; b < rows; b += kNormRowBlock) {
      std::fill(part.begin(), part.end(), 0.0f);
      for (std::int64_t r = b; r < std::min(rows, b + kNormRowBlock); ++r)
        for (std::int64_t c = 0; c < width; ++c)
          part[c] += ld(gy, r * pitch + c) * (ld(x, r * pitch + c) * rstd[r]);
      for (std::int64_t c = 0; c < width; ++c) total[c] += part[c];
    }
    T* dg = mp<T>(d_gamma);
    for (std::int64_t c = 0; c < width; ++c) st(dg, c, ld(dg, c) + total[c]);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t row = r * pitch;
      float dot = 0;
      for (std::int64_t c = 0; c < width; ++c) dot += ld(gy, row + c) * ld(g, c) * (ld(x, row + c) * rstd[r]);
      const float mean = dot / static_cast<float>(width);
      for (std::int64_t c = 0; c < width; ++c) {
        const float xh = ld(x, row + c) * rstd[r];
        float v = rstd[r] * (ld(gy, row + c) * ld(g, c) - xh * mean);
        if (res) v += ld(res, row + c);
        st(out, row + c, v);
      }
    }
  });
}

}  // namespace fb::kernels::host
