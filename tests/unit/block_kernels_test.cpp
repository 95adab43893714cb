// The transformer block's elementwise kernels on the host
// (kernels/host/{rmsnorm,rope,embedding,head_copy}_host.cpp): closed-form answers, and finite differences for
// the backward passes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/host/train_kernels_host.hpp"

namespace fb::kernels {
namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed, double lo = -2.0, double hi = 2.0) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(lo + rng.uniform() * (hi - lo));
  return v;
}

TEST(RmsNorm, ForwardMatchesTheFormulaAndStoresTheResidualSum) {
  auto k = make_host_train_kernels();
  // Row 0: x + delta = [3, 4]: mean square 12.5. Row 1: [0, -2]: mean square 2. gamma = [1, 2].
  const std::vector<float> x = {1, 5, 0, -1}, delta = {2, -1, 0, -1}, gamma = {1, 2};
  std::vector<float> sum(4), y(4), rstd(2);
  k->rmsnorm_forward(x.data(), delta.data(), sum.data(), gamma.data(), y.data(), rstd.data(), DType::fp32, 2,
                     2, 2, 1e-5f);
  EXPECT_EQ(sum, (std::vector<float>{3, 4, 0, -2}));
  EXPECT_NEAR(rstd[0], 1 / std::sqrt(12.5 + 1e-5), 1e-7);
  EXPECT_NEAR(rstd[1], 1 / std::sqrt(2 + 1e-5), 1e-7);
  EXPECT_NEAR(y[0], 3 / std::sqrt(12.5 + 1e-5), 1e-6);
  EXPECT_NEAR(y[1], 2 * 4 / std::sqrt(12.5 + 1e-5), 1e-6);
  EXPECT_NEAR(y[2], 0, 1e-7);
  EXPECT_NEAR(y[3], 2 * -2 / std::sqrt(2 + 1e-5), 1e-6);
  // Without delta the input itself is normalised and no sum is written.
  std::vector<float> y2(4), rstd2(2);
  k->rmsnorm_forward(sum.data(), nullptr, nullptr, gamma.data(), y2.data(), rstd2.data(), DType::fp32, 2, 2,
                     2, 1e-5f);
  EXPECT_EQ(y2, y);
  EXPECT_EQ(rstd2, rstd);
}

TEST(RmsNorm, ColumnsBeyondTheWidthOfAStridedRowAreNotTouched) {
  auto k = make_host_train_kernels();
  // Width 3 inside rows of 5 (an MLA latent block): columns 3 and 4 keep their values.
  auto x = random_values(10, 1);
  const auto gamma = random_values(3, 2, 0.5, 1.5);
  std::vector<float> y(10, 7.0f), rstd(2);
  k->rmsnorm_forward(x.data(), nullptr, nullptr, gamma.data(), y.data(), rstd.data(), DType::fp32, 2, 3, 5,
                     1e-6f);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(y[r * 5 + 3], 7.0f);
    EXPECT_EQ(y[r * 5 + 4], 7.0f);
    double ms = 0;
    for (int c = 0; c < 3; ++c) ms += x[r * 5 + c] * x[r * 5 + c] / 3.0;
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(y[r * 5 + c], x[r * 5 + c] / std::sqrt(ms + 1e-6) * gamma[c], 1e-5);
  }
}

// L = Σ w ⊙ rmsnorm(x; γ): dL/dx and dL/dγ from the kernel against central differences of the forward.
TEST(RmsNorm, BackwardMatchesFiniteDifferences) {
  auto k = make_host_train_kernels();
  const std::int64_t rows = 70, width = 24;  // more rows than one kNormRowBlock
  auto x = random_values(rows * width, 3);
  auto gamma = random_values(width, 4, 0.5, 1.5);
  const auto w = random_values(rows * width, 5);
  const auto loss = [&](const std::vector<float>& xs, const std::vector<float>& gs) {
    std::vector<float> y(xs.size()), r(rows);
    k->rmsnorm_forward(xs.data(), nullptr, nullptr, gs.data(), y.data(), r.data(), DType::fp32, rows, width,
                       width, 1e-6f);
    double l = 0;
    for (std::size_t i = 0; i < y.size(); ++i) l += static_cast<double>(w[i]) * y[i];
    return l;
  };
  std::vector<float> y(x.size()), rstd(rows), dx(x.size()), dgamma(width, 0.5f);
  const auto residual = random_values(x.size(), 6);
  k->rmsnorm_forward(x.data(), nullptr, nullptr, gamma.data(), y.data(), rstd.data(), DType::fp32, rows,
                     width, width, 1e-6f);
  k->rmsnorm_backward(w.data(), x.data(), gamma.data(), rstd.data(), residual.data(), dx.data(),
                      dgamma.data(), DType::fp32, rows, width, width);
  const float h = 1e-2f;
  for (std::size_t i = 0; i < x.size(); i += 37) {
    auto xp = x, xm = x;
    xp[i] += h, xm[i] -= h;
    const double numeric = (loss(xp, gamma) - loss(xm, gamma)) / (2 * h);
    EXPECT_NEAR(dx[i] - residual[i], numeric, 2e-3 * (1 + std::fabs(numeric))) << i;
  }
  for (std::int64_t c = 0; c < width; ++c) {
    auto gp = gamma, gm = gamma;
    gp[c] += h, gm[c] -= h;
    const double numeric = (loss(x, gp) - loss(x, gm)) / (2 * h);
    EXPECT_NEAR(dgamma[c] - 0.5f, numeric, 2e-3 * (1 + std::fabs(numeric))) << c;  // accumulated onto 0.5
  }
}

TEST(RmsNorm, Bf16StorageRoundsTheStoredSumAndOutput) {
  auto k = make_host_train_kernels();
  const std::vector<float> xf = {1.0078125f, 3.0f}, df = {0.00390625f, 1.0f}, gf = {1.0f, 1.0f};
  std::vector<std::uint16_t> x, d, g, sum(2), y(2);
  for (float v : xf) x.push_back(float_to_bf16(v));
  for (float v : df) d.push_back(float_to_bf16(v));
  for (float v : gf) g.push_back(float_to_bf16(v));
  float rstd[1];
  k->rmsnorm_forward(x.data(), d.data(), sum.data(), g.data(), y.data(), rstd, DType::bf16, 1, 2, 2, 0.0f);
  // 1 + 2^-7 and 2^-8 are exact in bf16; their sum 1 + 3·2^-8 is not and rounds (to even) to 1 + 2^-6. The
  // norm reads the rounded value.
  EXPECT_EQ(bf16_to_float(sum[0]), 1.015625f);
  const float s0 = bf16_to_float(sum[0]), s1 = bf16_to_float(sum[1]);
  EXPECT_FLOAT_EQ(rstd[0], 1.0f / std::sqrt((s0 * s0 + s1 * s1) / 2.0f));
  EXPECT_EQ(bf16_to_float(y[1]), round_to_bf16(s1 * rstd[0]));
}

TEST(Rope, InverseFrequenciesAreThetaPowers) {
  const auto f = rope_inverse_frequencies(4, 10000.0f);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.01f);  // 10000^(-2/4)
}

TEST(Rope, RotatesPairsByPositionTimesFrequency) {
  auto k = make_host_train_kernels();
  // rot_dim 2 (inv_freq 1): position p rotates (a, b) by p radians. Rows 3 and 9 with seq 8: positions 3
  // and 1.
  std::vector<float> x(10 * 2);
  for (int t = 0; t < 10; ++t) x[t * 2] = 1.0f, x[t * 2 + 1] = 0.5f;
  k->rope(x.data(), DType::fp32, 10, 2, 0, 1, 2, 2, 8, 10000.0f, false);
  for (int t : {0, 3, 9}) {
    const double p = t % 8;
    EXPECT_NEAR(x[t * 2], std::cos(p) - 0.5 * std::sin(p), 1e-6) << t;
    EXPECT_NEAR(x[t * 2 + 1], 0.5 * std::cos(p) + std::sin(p), 1e-6) << t;
  }
}

TEST(Rope, TouchesOnlyTheRotatedColumnsAndInverseUndoesIt) {
  auto k = make_host_train_kernels();
  // Two heads of 6 columns, rotating their last 4 (col0 2, as MLA's rope part of each query head), rows
  // of 14.
  const std::int64_t rows = 33, ld = 14;
  const auto x0 = random_values(rows * ld, 7);
  auto x = x0;
  k->rope(x.data(), DType::fp32, rows, ld, 2, 2, 6, 4, 16, 500000.0f, false);
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t c = 0; c < ld; ++c) {
      const bool rotated = (c >= 2 && c < 6) || (c >= 8 && c < 12);
      if (!rotated) {
        EXPECT_EQ(x[t * ld + c], x0[t * ld + c]);
      }
    }
  // Rotations keep each pair's length.
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t i = 0; i < 2; ++i) {
        const std::int64_t a = t * ld + 2 + j * 6 + i, b = a + 2;
        EXPECT_NEAR(x[a] * x[a] + x[b] * x[b], x0[a] * x0[a] + x0[b] * x0[b], 1e-5);
      }
  k->rope(x.data(), DType::fp32, rows, ld, 2, 2, 6, 4, 16, 500000.0f, true);
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], x0[i], 1e-5) << i;
}

TEST(Embedding, LooksUpThisRanksRowsAndZerosTheOthers) {
  auto k = make_host_train_kernels();
  // This rank holds vocabulary rows [4, 7) of width 2: row v = (10v, 10v + 1).
  std::vector<float> table = {40, 41, 50, 51, 60, 61};
  const std::vector<std::int32_t> ids = {5, 0, 6, 4, 9};
  std::vector<float> out(10, -1.0f);
  k->embedding_forward(table.data(), DType::fp32, 4, 3, 2, ids.data(), 5, out.data());
  EXPECT_EQ(out, (std::vector<float>{50, 51, 0, 0, 60, 61, 40, 41, 0, 0}));
}

TEST(Embedding, BackwardAddsEveryTokensGradientToItsRow) {
  auto k = make_host_train_kernels();
  const std::vector<std::int32_t> ids = {5, 0, 5, 4, 9, 5};
  const std::vector<float> d_out = {1, 2, 10, 20, 3, 4, 5, 6, 100, 200, 7, 8};
  std::vector<float> grad = {0.5f, 0.5f, 0, 0, 0, 0};  // rows 4, 5, 6 of the vocabulary
  k->embedding_backward(d_out.data(), DType::fp32, 4, 3, 2, ids.data(), 6, grad.data());
  // Row 4: token 3 (5, 6) onto 0.5; row 5: tokens 0, 2 and 5: (1 + 3 + 7, 2 + 4 + 8); row 6: none. Ids 0 and
  // 9 belong to other ranks.
  EXPECT_EQ(grad, (std::vector<float>{5.5f, 6.5f, 11, 14, 0, 0}));
}

TEST(Embedding, BackwardIsTheAdjointOfTheLookup) {
  auto k = make_host_train_kernels();
  // <lookup(table), g> = <table, scatter_add(g)> for any table and g.
  const std::int64_t vocab = 50, width = 8, tokens = 300;
  SplitMix64 rng(11);
  std::vector<std::int32_t> ids(tokens);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng.next() % 70);  // some ids beyond this rank's rows
  const auto table = random_values(vocab * width, 12), g = random_values(tokens * width, 13);
  std::vector<float> out(tokens * width), grad(vocab * width, 0.0f);
  k->embedding_forward(table.data(), DType::fp32, 10, vocab, width, ids.data(), tokens, out.data());
  k->embedding_backward(g.data(), DType::fp32, 10, vocab, width, ids.data(), tokens, grad.data());
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < out.size(); ++i) lhs += static_cast<double>(out[i]) * g[i];
  for (std::size_t i = 0; i < grad.size(); ++i) rhs += static_cast<double>(table[i]) * grad[i];
  EXPECT_NEAR(lhs, rhs, 1e-3);
}

TEST(HeadCopy, CopiesBroadcastsAndSumsHeadBlocks) {
  auto k = make_host_train_kernels();
  // src rows of 6: two heads of 3 columns (h0: 1 2 3, h1: 4 5 6 in row 0; +10 in row 1).
  const std::vector<float> src = {1, 2, 3, 4, 5, 6, 11, 12, 13, 14, 15, 16};
  // Copy columns 1..2 of each head into rows of 4 at columns 0 and 2.
  std::vector<float> dst(8, 0.0f);
  k->copy_heads(src.data(), 6, 1, 3, dst.data(), 4, 0, 2, DType::fp32, 2, 2, 2, false);
  EXPECT_EQ(dst, (std::vector<float>{2, 3, 5, 6, 12, 13, 15, 16}));
  // Accumulate the same again.
  k->copy_heads(src.data(), 6, 1, 3, dst.data(), 4, 0, 2, DType::fp32, 2, 2, 2, true);
  EXPECT_EQ(dst, (std::vector<float>{4, 6, 10, 12, 24, 26, 30, 32}));
  // Sum the heads (dst stride 0): column c = h0[c] + h1[c].
  std::vector<float> sum(2 * 3, 100.0f);
  k->copy_heads(src.data(), 6, 0, 3, sum.data(), 3, 0, 0, DType::fp32, 2, 2, 3, false);
  EXPECT_EQ(sum, (std::vector<float>{5, 7, 9, 25, 27, 29}));
  // Broadcast (src stride 0): one block to both heads.
  std::vector<float> b(2 * 6, 0.0f);
  k->copy_heads(src.data(), 6, 4, 0, b.data(), 6, 1, 3, DType::fp32, 2, 2, 2, false);
  EXPECT_EQ(b, (std::vector<float>{0, 5, 6, 0, 5, 6, 0, 15, 16, 0, 15, 16}));
}

}  // namespace
}  // namespace fb::kernels
