#include "workloads/attention_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <fmt/format.h>

namespace fb::workloads {

double attention_tolerance(DType type) {
  switch (type) {
    case DType::fp32:
      return 1e-3;
    case DType::fp16:
      return 1e-2;
    case DType::fp8_e4m3:
      // e4m3 keeps 4 significant bits: each output is rounded by up to 2^-4 of its magnitude, and P and dP
      // once more inside the kernels. The host engine, which rounds as cuDNN does, stays near 0.05.
      return 0.15;
    default:
      return 5e-2;  // bf16: 8 mantissa bits, and P and dS pass through bf16 inside the kernels
  }
}

std::vector<std::int64_t> attention_check_rows(const kernels::AttentionShape& s, std::size_t count,
                                               std::uint64_t seed) {
  const std::int64_t tokens = s.batch * s.seq;
  std::vector<std::int64_t> rows;
  for (std::int64_t b = 0; b < s.batch && rows.size() < count; ++b) {
    rows.push_back(b * s.seq);
    if (rows.size() < count && s.seq > 1) rows.push_back(b * s.seq + s.seq - 1);
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, tokens - 1);
  for (std::size_t tries = 0;
       rows.size() < std::min<std::size_t>(count, static_cast<std::size_t>(tokens)) && tries < 64 * count;
       ++tries) {
    const std::int64_t r = pick(rng);
    if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

namespace {

// Largest |got − want| over max |want| of one head's vector (a vector of zeros compares absolutely).
double vector_error(const float* got, const std::vector<double>& want) {
  double diff = 0, scale = 0;
  for (std::size_t c = 0; c < want.size(); ++c) {
    if (!std::isfinite(got[c])) return std::numeric_limits<double>::infinity();  // std::max would drop a NaN
    diff = std::max(diff, std::abs(static_cast<double>(got[c]) - want[c]));
    scale = std::max(scale, std::abs(want[c]));
  }
  return diff / std::max(scale, 1e-30);
}

}  // namespace

AttentionCheck check_attention_rows(const kernels::AttentionShape& s, const AttentionTensors& t,
                                    std::span<const std::int64_t> rows, double tolerance) {
  const std::int64_t group = s.heads / s.kv_heads, d = s.head_dim, dv = s.value_dim;
  AttentionCheck out;
  auto record = [&](double error, std::int64_t row, std::int64_t h, const char* what) {
    const double ratio = std::isfinite(error) ? error / tolerance : std::numeric_limits<double>::infinity();
    out.worst = std::max(out.worst, ratio);
    if (!(ratio <= 1)) {
      if (out.mismatches++ == 0)
        out.detail = fmt::format(
            "{} of token {} (sequence {}, position {}), head {}: error {:.3g} over the "
            "tolerance {:.3g}",
            what, row, row / s.seq, row % s.seq, h, error, tolerance);
    }
  };
  std::vector<double> score, p, o(static_cast<std::size_t>(dv)), dq(static_cast<std::size_t>(d));
  for (const std::int64_t row : rows) {
    const std::int64_t b = row / s.seq, i = row % s.seq, keys = s.causal ? i + 1 : s.seq;
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t g = h / group;
      const float* q = &t.q[static_cast<std::size_t>((row * s.heads + h) * d)];
      const float* d_o = &t.d_o[static_cast<std::size_t>((row * s.heads + h) * dv)];
      auto key = [&](std::int64_t j) {
        return &t.k[static_cast<std::size_t>(((b * s.seq + j) * s.kv_heads + g) * d)];
      };
      auto value = [&](std::int64_t j) {
        return &t.v[static_cast<std::size_t>(((b * s.seq + j) * s.kv_heads + g) * dv)];
      };
      score.assign(static_cast<std::size_t>(keys), 0);
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < keys; ++j) {
        double acc = 0;
        for (std::int64_t c = 0; c < d; ++c) acc += static_cast<double>(q[c]) * key(j)[c];
        score[static_cast<std::size_t>(j)] = s.scale * acc;
        m = std::max(m, score[static_cast<std::size_t>(j)]);
      }
      double sum = 0;
      for (const double x : score) sum += std::exp(x - m);
      const double lse = m + std::log(sum);
      p.resize(score.size());
      std::fill(o.begin(), o.end(), 0.0);
      for (std::int64_t j = 0; j < keys; ++j) {
        p[static_cast<std::size_t>(j)] = std::exp(score[static_cast<std::size_t>(j)] - lse);
        for (std::int64_t c = 0; c < dv; ++c)
          o[static_cast<std::size_t>(c)] += p[static_cast<std::size_t>(j)] * value(j)[c];
      }
      // D = dO·O; dS_j = P_j (dO·V_j − D); dQ = scale Σ_j dS_j K_j (FlashAttention-2's backward, one row).
      // D takes O as the engine stored it, which is what its backward read: the exact O would charge the
      // backward with the forward's rounding, and Σ_j dS_j = 0 cancels it in dQ only with the same O.
      const float* stored_o = &t.o[static_cast<std::size_t>((row * s.heads + h) * dv)];
      double big_d = 0;
      for (std::int64_t c = 0; c < dv; ++c) big_d += static_cast<double>(d_o[c]) * stored_o[c];
      std::fill(dq.begin(), dq.end(), 0.0);
      for (std::int64_t j = 0; j < keys; ++j) {
        double dp = 0;
        for (std::int64_t c = 0; c < dv; ++c) dp += static_cast<double>(d_o[c]) * value(j)[c];
        const double ds = p[static_cast<std::size_t>(j)] * (dp - big_d);
        for (std::int64_t c = 0; c < d; ++c) dq[static_cast<std::size_t>(c)] += s.scale * ds * key(j)[c];
      }
      record(vector_error(stored_o, o), row, h, "output");
      record(std::abs(t.stats[static_cast<std::size_t>((b * s.heads + h) * s.seq + i)] - lse) /
                 std::max(1.0, std::abs(lse)),
             row, h, "log-sum-exp");
      record(vector_error(&t.dq[static_cast<std::size_t>((row * s.heads + h) * d)], dq), row, h,
             "query gradient");
    }
    ++out.rows;
  }
  return out;
}

}  // namespace fb::workloads
