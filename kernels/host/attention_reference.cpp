#include "kernels/host/attention_reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/numeric_formats.hpp"

namespace fb::kernels {
namespace {

// x rounded to e4m3 at `scale` and read back (saturating at ±448, as cuDNN's conversions are).
double fp8_round(double x, double scale) {
  return static_cast<double>(fp8_e4m3_to_float(float_to_fp8_e4m3(static_cast<float>(x * scale)))) / scale;
}

// Element offsets of token t, head h in the [batch, seq, heads, dim] layout.
struct Layout {
  const AttentionShape& s;
  std::int64_t q(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return ((b * s.seq + t) * s.heads + h) * s.head_dim;
  }
  std::int64_t k(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return ((b * s.seq + t) * s.kv_heads + h) * s.head_dim;
  }
  std::int64_t v(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return ((b * s.seq + t) * s.kv_heads + h) * s.value_dim;
  }
  std::int64_t o(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return ((b * s.seq + t) * s.heads + h) * s.value_dim;
  }
  std::int64_t keys(std::int64_t query) const { return s.causal ? query + 1 : s.seq; }
  std::int64_t kv_head(std::int64_t h) const { return h / (s.heads / s.kv_heads); }
};

double dot(const float* a, const float* b, std::int64_t n) {
  double d = 0;
  for (std::int64_t i = 0; i < n; ++i) d += static_cast<double>(a[i]) * b[i];
  return d;
}

// Softmax probabilities of query i of head h over its visible keys, and their log-sum-exp.
double probabilities(const Layout& L, const float* q, const float* k, std::int64_t b, std::int64_t h,
                     std::int64_t i, std::vector<double>& p) {
  const std::int64_t n = L.keys(i), g = L.kv_head(h);
  p.assign(n, 0.0);
  double mx = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < n; ++j) {
    p[j] = L.s.scale * dot(q + L.q(b, i, h), k + L.k(b, j, g), L.s.head_dim);
    mx = std::max(mx, p[j]);
  }
  double sum = 0;
  for (auto& x : p) sum += (x = std::exp(x - mx));
  for (auto& x : p) x /= sum;
  return mx + std::log(sum);
}

}  // namespace

void attention_forward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                 float* o, float* stats, AttentionFp8Emulation* fp8) {
  check_attention_shape(s);
  const Layout L{s};
  std::vector<double> p;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h)
      for (std::int64_t i = 0; i < s.seq; ++i) {
        const double lse = probabilities(L, q, k, b, h, i, p);
        if (stats) stats[(b * s.heads + h) * s.seq + i] = static_cast<float>(lse);
        if (fp8)
          for (auto& x : p) {
            fp8->s_amax = std::max(fp8->s_amax, x);
            if (fp8->s_scale > 0) x = fp8_round(x, fp8->s_scale);
          }
        for (std::int64_t d = 0; d < s.value_dim; ++d) {
          double acc = 0;
          for (std::int64_t j = 0; j < static_cast<std::int64_t>(p.size()); ++j)
            acc += p[j] * v[L.v(b, j, L.kv_head(h)) + d];
          o[L.o(b, i, h) + d] = static_cast<float>(acc);
        }
      }
}

void attention_backward_reference(const AttentionShape& s, const float* q, const float* k, const float* v,
                                  const float* o, const float* d_o, float* dq, float* dk, float* dv,
                                  AttentionFp8Emulation* fp8) {
  check_attention_shape(s);
  const Layout L{s};
  const std::int64_t nq = s.batch * s.seq * s.heads, nk = s.batch * s.seq * s.kv_heads;
  std::vector<double> gq(nq * s.head_dim, 0.0), gk(nk * s.head_dim, 0.0), gv(nk * s.value_dim, 0.0), p;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = L.kv_head(h);
      for (std::int64_t i = 0; i < s.seq; ++i) {
        probabilities(L, q, k, b, h, i, p);
        const float* doi = d_o + L.o(b, i, h);
        const double D = dot(doi, o + L.o(b, i, h), s.value_dim);
        for (std::int64_t j = 0; j < static_cast<std::int64_t>(p.size()); ++j) {
          // The gradient of the scaled score q·k_j · scale (cuDNN's dP), and P as the dV product reads it.
          double ds = s.scale * (p[j] * (dot(doi, v + L.v(b, j, g), s.value_dim) - D)), pj = p[j];
          if (fp8) {
            fp8->dp_amax = std::max(fp8->dp_amax, std::abs(ds));
            if (fp8->dp_scale > 0) ds = fp8_round(ds, fp8->dp_scale);
            if (fp8->s_scale > 0) pj = fp8_round(pj, fp8->s_scale);
          }
          for (std::int64_t d = 0; d < s.head_dim; ++d) {
            gq[L.q(b, i, h) + d] += ds * k[L.k(b, j, g) + d];
            gk[L.k(b, j, g) + d] += ds * q[L.q(b, i, h) + d];
          }
          for (std::int64_t d = 0; d < s.value_dim; ++d) gv[L.v(b, j, g) + d] += pj * doi[d];
        }
      }
    }
  std::transform(gq.begin(), gq.end(), dq, [](double x) { return static_cast<float>(x); });
  std::transform(gk.begin(), gk.end(), dk, [](double x) { return static_cast<float>(x); });
  std::transform(gv.begin(), gv.end(), dv, [](double x) { return static_cast<float>(x); });
}

}  // namespace fb::kernels
