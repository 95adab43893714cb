// Host reference kernels of the train step (kernels/host/train_kernels_host.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/host/train_kernels_host.hpp"

namespace fb::kernels {
namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform() * 4.0 - 2.0);
  return v;
}

TEST(MoeKernels, TopKMatchesASortBasedReference) {
  auto k = make_host_train_kernels();
  const std::int64_t tokens = 97, experts = 16, top = 4;
  auto logits = random_values(tokens * experts, 7);
  std::vector<float> bias(experts);
  for (std::int64_t e = 0; e < experts; ++e) bias[e] = -0.3f * std::log1p(static_cast<float>(e));
  std::vector<std::int32_t> idx(tokens * top);
  std::vector<float> w(tokens * top);
  k->route_topk(logits.data(), DType::fp32, tokens, experts, top, bias.data(), idx.data(), w.data());
  for (std::int64_t t = 0; t < tokens; ++t) {
    std::vector<int> order(experts);
    std::iota(order.begin(), order.end(), 0);
    const auto score = [&](int e) { return logits[t * experts + e] + bias[e]; };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return score(a) > score(b); });
    // Softmax is monotonic: the top-k by probability are the top-k by biased logit.
    double denom = 0;
    for (int j = 0; j < top; ++j) denom += std::exp(score(order[j]));
    float sum = 0;
    for (int j = 0; j < top; ++j) {
      EXPECT_EQ(idx[t * top + j], order[j]) << "token " << t << " slot " << j;
      EXPECT_NEAR(w[t * top + j], std::exp(score(order[j])) / denom, 1e-5);
      sum += w[t * top + j];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
}

TEST(MoeKernels, PermutationIsAStableSortByExpert) {
  auto k = make_host_train_kernels();
  const std::vector<std::int32_t> idx = {2, 0, 1, 2, 0, 2};  // 3 tokens, top-2
  std::vector<std::int64_t> counts(3), host(3);
  std::vector<std::int32_t> row(6);
  k->build_permutation(idx.data(), 6, 3, counts.data(), row.data(), host.data());
  EXPECT_EQ(host, (std::vector<std::int64_t>{2, 1, 3}));
  EXPECT_EQ(row, (std::vector<std::int32_t>{3, 0, 2, 4, 1, 5}));
}

// Permute, identity experts, weighted un-permute: each token comes back as Σ_j w_j · x = x (weights sum to
// 1), and without renormalisation (weights of one slot only) as w · x.
TEST(MoeKernels, PermuteThenUnpermuteWithIdentityExpertsScalesByRoutingWeights) {
  auto k = make_host_train_kernels();
  const std::int64_t tokens = 33, experts = 8, top = 2, width = 24;
  auto logits = random_values(tokens * experts, 11);
  auto x = random_values(tokens * width, 12);
  std::vector<std::int32_t> idx(tokens * top), row(tokens * top);
  std::vector<float> w(tokens * top);
  std::vector<std::int64_t> counts(experts), host(experts);
  k->route_topk(logits.data(), DType::fp32, tokens, experts, top, nullptr, idx.data(), w.data());
  k->build_permutation(idx.data(), tokens * top, experts, counts.data(), row.data(), host.data());
  std::vector<float> permuted(tokens * top * width), y(tokens * width, 0.0f);
  k->permute(x.data(), DType::fp32, tokens, top, width, row.data(), nullptr, permuted.data());
  // Rows of one expert are contiguous and hold the tokens routed to it.
  std::int64_t begin = 0;
  for (std::int64_t e = 0; e < experts; ++e) {
    for (std::int64_t s = 0; s < tokens * top; ++s)
      if (idx[s] == e) {
        EXPECT_GE(row[s], begin);
        EXPECT_LT(row[s], begin + host[e]);
        EXPECT_EQ(permuted[row[s] * width], x[(s / top) * width]);
      }
    begin += host[e];
  }
  k->unpermute(permuted.data(), DType::fp32, tokens, top, width, row.data(), w.data(), y.data(), false);
  for (std::int64_t i = 0; i < tokens * width; ++i) EXPECT_NEAR(y[i], x[i], 1e-5);
  // One slot's weight only: the input scaled by that weight.
  std::vector<float> first_only(w.size(), 0.0f);
  for (std::int64_t t = 0; t < tokens; ++t) first_only[t * top] = w[t * top];
  k->unpermute(permuted.data(), DType::fp32, tokens, top, width, row.data(), first_only.data(), y.data(),
               false);
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t c = 0; c < width; ++c)
      EXPECT_NEAR(y[t * width + c], w[t * top] * x[t * width + c], 1e-5);
  // The weight gradient of un-permute is <dy, expert output>.
  std::vector<float> dw(w.size());
  k->routing_weight_grad(x.data(), permuted.data(), DType::fp32, tokens, top, width, row.data(), dw.data());
  for (std::int64_t t = 0; t < tokens; ++t) {
    float dot = 0;
    for (std::int64_t c = 0; c < width; ++c) dot += x[t * width + c] * x[t * width + c];
    EXPECT_NEAR(dw[t * top], dot, 1e-3);
  }
}

TEST(TrainKernels, CausalSoftmaxMasksTheFutureAndSumsToOne) {
  auto k = make_host_train_kernels();
  const std::int64_t keys = 8, queries = 4, first = 4;
  auto s = random_values(keys * queries, 3);
  k->causal_softmax(s.data(), DType::fp32, keys, queries, first, 1, keys * queries, 0.5f);
  for (std::int64_t q = 0; q < queries; ++q) {
    float sum = 0;
    for (std::int64_t i = 0; i < keys; ++i) {
      if (i > first + q) {
        EXPECT_EQ(s[q * keys + i], 0.0f);
      }
      sum += s[q * keys + i];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
}

TEST(TrainKernels, ActivationsMatchTheirDefinitionsAndBf16Rounds) {
  auto k = make_host_train_kernels();
  const std::vector<float> up = {1.0f, -2.0f, 0.5f, 3.0f};  // one token, f = 2: gate {1, -2}, up {0.5, 3}
  std::vector<float> out(2);
  k->activation_forward(true, up.data(), DType::fp32, 2, 1, out.data());
  EXPECT_NEAR(out[0], 1.0f / (1.0f + std::exp(-1.0f)) * 0.5f, 1e-6);
  EXPECT_NEAR(out[1], -2.0f / (1.0f + std::exp(2.0f)) * 3.0f, 1e-6);
  std::vector<std::uint16_t> b(4), bo(2);
  for (int i = 0; i < 4; ++i) b[i] = float_to_bf16(up[i]);
  k->activation_forward(true, b.data(), DType::bf16, 2, 1, bo.data());
  EXPECT_EQ(bf16_to_float(bo[0]), round_to_bf16(out[0]));
  EXPECT_THROW(k->add(out.data(), out.data(), DType::fp16, 2), Error);
}

TEST(TrainKernels, AdamFirstStepMovesEachWeightByLearningRate) {
  auto k = make_host_train_kernels();
  std::vector<float> param(3), master = {1.0f, 2.0f, -1.0f}, m(3, 0.0f), v(3, 0.0f);
  const std::vector<float> grad = {0.5f, -4.0f, 1e-3f};
  AdamParams p;
  p.lr = 0.01f;
  k->adam_update(param.data(), grad.data(), DType::fp32, master.data(), m.data(), v.data(), 3, p);
  // Step 1 with bias correction: update = g/|g| (up to eps).
  EXPECT_NEAR(master[0], 0.99f, 1e-5);
  EXPECT_NEAR(master[1], 2.01f, 1e-5);
  EXPECT_NEAR(master[2], -1.01f, 1e-4);
  EXPECT_EQ(param, master);
  EXPECT_NEAR(k->sum_squares(grad.data(), DType::fp32, 3), 0.25 + 16 + 1e-6, 1e-9);
}

}  // namespace
}  // namespace fb::kernels
