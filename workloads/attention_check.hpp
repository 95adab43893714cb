#pragma once
// The attention benchmark's correctness check: for sampled query rows, every head's output, log-sum-exp and
// query gradient recomputed in fp64 from the inputs the engine read (the same formulas as
// kernels/host/attention_reference.hpp, per row: O(i · head_dim) work for row i, so a few rows of an
// s 8192 shape check in well under a second). Key and value gradients sum over every later query and are
// not sampled; the reference engine's tests cover them.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "kernels/attention_engine.hpp"

namespace fb::workloads {

// Packed [batch, seq, heads, dim] fp32 copies of what the engine read and wrote (stats [batch, heads, seq]).
struct AttentionTensors {
  std::vector<float> q, k, v, o, d_o, dq, stats;
};

struct AttentionCheck {
  std::size_t rows = 0;        // (batch, token) rows checked, each over every head
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
