#pragma once
// The attention benchmark's correctness check, recomputed in fp64 from what the engine read (the formulas of
// kernels/host/attention_reference.hpp): for sampled query rows, every head's output, log-sum-exp and query
// gradient (O(seq · head_dim) per row and head); for the same tokens as keys, every KV head's key and value
// gradient. Those sum over every query that sees the key, so they take P from the log-sum-exp statistics
// and D = dO·O from the output, both as the engine stored them for its backward (sampled themselves in
// the query rows): O(seq · head_dim) per key and query head too. At s 8192 with 32 heads a row (as query
// and key) takes about 0.7 s of one core; the rows are spread over the host's cores.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/attention_engine.hpp"

namespace fb::workloads {

// Packed [batch, seq, heads, dim] fp32 copies of what the engine read and wrote (stats [batch, heads, seq];
// dk and dv [batch, seq, kv_heads, dim]). Empty dk and dv are not checked.
struct AttentionTensors {
  std::vector<float> q, k, v, o, d_o, dq, dk, dv, stats;
};

struct AttentionCheck {
  std::size_t rows = 0;        // (batch, token) rows checked, each over every head (and as a key)
  std::size_t mismatches = 0;  // (row, head, quantity) over tolerance
  double worst = 0;            // largest error over its tolerance (≤ 1 passes)
  std::string detail;          // the first mismatch, in words
};

// Per-dtype tolerance on each head's vector error relative to its largest element (outputs are rounded to
// the dtype; the engines accumulate in fp32).
double attention_tolerance(DType type);

// Rows to check: the first and last token of every sequence, then seeded random ones, `count` in all
// (fewer when the shape has fewer), sorted; each a token index in [0, batch · seq).
std::vector<std::int64_t> attention_check_rows(const kernels::AttentionShape& s, std::size_t count,
                                               std::uint64_t seed);

AttentionCheck check_attention_rows(const kernels::AttentionShape& s, const AttentionTensors& t,
                                    std::span<const std::int64_t> rows, double tolerance);

}  // namespace fb::workloads
