#include "workloads/attention_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

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

// Collects one row's comparisons: how many exceed the tolerance, the worst ratio, the first in words.
struct Recorder {
  const kernels::AttentionShape& s;
  double tolerance;
  AttentionCheck out;
  // `what` names the quantity and `head` the kind of head: "output of ... head 3", "... KV head 1".
  void operator()(double error, std::int64_t row, std::int64_t h, const char* what,
                  const char* head = "head") {
    const double ratio = std::isfinite(error) ? error / tolerance : std::numeric_limits<double>::infinity();
    out.worst = std::max(out.worst, ratio);
    if (!(ratio <= 1) && out.mismatches++ == 0)
      out.detail = fmt::format(
          "{} of token {} (sequence {}, position {}), {} {}: error {:.3g} over the "
          "tolerance {:.3g}",
          what, row, row / s.seq, row % s.seq, head, h, error, tolerance);
  }
};

// Token `row` as a key: for each KV head g, dK = scale · Σ dS_ij Q_i and dV = Σ P_ij dO_i over the queries
// i of g's query heads that see it, with P_ij = exp(scale · q_i·k_j − lse_i) from the stored statistics and
// dS_ij = P_ij (dO_i·V_j − D_i), D_i = dO_i·O_i from the stored output.
void check_key_row(const kernels::AttentionShape& s, const AttentionTensors& t, std::int64_t row,
                   Recorder& record) {
  const std::int64_t group = s.heads / s.kv_heads, d = s.head_dim, dv = s.value_dim;
  const std::int64_t b = row / s.seq, j = row % s.seq;
  std::vector<double> dk(static_cast<std::size_t>(d)), dvv(static_cast<std::size_t>(dv));
  for (std::int64_t g = 0; g < s.kv_heads; ++g) {
    const float* key = &t.k[static_cast<std::size_t>((row * s.kv_heads + g) * d)];
    const float* value = &t.v[static_cast<std::size_t>((row * s.kv_heads + g) * dv)];
    std::fill(dk.begin(), dk.end(), 0.0);
    std::fill(dvv.begin(), dvv.end(), 0.0);
    for (std::int64_t h = g * group; h < (g + 1) * group; ++h)
      for (std::int64_t i = s.causal ? j : 0; i < s.seq; ++i) {
        const std::int64_t qrow = b * s.seq + i;
        const float* q = &t.q[static_cast<std::size_t>((qrow * s.heads + h) * d)];
        const float* d_o = &t.d_o[static_cast<std::size_t>((qrow * s.heads + h) * dv)];
        const float* o = &t.o[static_cast<std::size_t>((qrow * s.heads + h) * dv)];
        double score = 0, dp = 0, big_d = 0;
        for (std::int64_t c = 0; c < d; ++c) score += static_cast<double>(q[c]) * key[c];
        for (std::int64_t c = 0; c < dv; ++c) {
          dp += static_cast<double>(d_o[c]) * value[c];
          big_d += static_cast<double>(d_o[c]) * o[c];
        }
        const double p =
            std::exp(s.scale * score - t.stats[static_cast<std::size_t>((b * s.heads + h) * s.seq + i)]);
        const double ds = p * (dp - big_d);
        for (std::int64_t c = 0; c < d; ++c) dk[static_cast<std::size_t>(c)] += s.scale * ds * q[c];
        for (std::int64_t c = 0; c < dv; ++c) dvv[static_cast<std::size_t>(c)] += p * d_o[c];
      }
    record(vector_error(&t.dk[static_cast<std::size_t>((row * s.kv_heads + g) * d)], dk), row, g,
           "key gradient", "KV head");
    record(vector_error(&t.dv[static_cast<std::size_t>((row * s.kv_heads + g) * dv)], dvv), row, g,
           "value gradient", "KV head");
  }
}

// Token `row` as a query: every head's output, log-sum-exp and query gradient.
void check_query_row(const kernels::AttentionShape& s, const AttentionTensors& t, std::int64_t row,
                     Recorder& record) {
  const std::int64_t group = s.heads / s.kv_heads, d = s.head_dim, dv = s.value_dim;
  std::vector<double> score, p, o(static_cast<std::size_t>(dv)), dq(static_cast<std::size_t>(d));
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
}

}  // namespace

AttentionCheck check_attention_rows(const kernels::AttentionShape& s, const AttentionTensors& t,
                                    std::span<const std::int64_t> rows, double tolerance) {
  // Rows are independent: spread over the host's cores (s 8192 with 32 heads is about 0.7 s per row on
  // one), then merged in row order so the first mismatch named is the same whatever the thread count.
  std::vector<AttentionCheck> per_row(rows.size());
  const std::size_t workers =
      std::min<std::size_t>(rows.size(), std::max(1u, std::thread::hardware_concurrency()));
  auto work = [&](std::size_t first) {
    for (std::size_t r = first; r < rows.size(); r += workers) {
      Recorder record{s, tolerance, {}};
      check_query_row(s, t, rows[r], record);
      if (!t.dk.empty() && !t.dv.empty()) check_key_row(s, t, rows[r], record);
      record.out.rows = 1;
      per_row[r] = std::move(record.out);
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work, w);
  if (workers > 0) work(0);
  for (auto& th : threads) th.join();
  AttentionCheck out;
  for (auto& r : per_row) {
    out.rows += r.rows;
    out.worst = std::max(out.worst, r.worst);
    if (out.mismatches == 0 && r.mismatches > 0) out.detail = std::move(r.detail);
    out.mismatches += r.mismatches;
  }
  return out;
}

}  // namespace fb::workloads
