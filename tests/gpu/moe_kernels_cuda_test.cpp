// The CUDA train kernels against the host reference (kernels/host/train_kernels_host.cpp), and a one-GPU
// training step. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "core/mpi_context.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/host/train_kernels_host.hpp"
#include "kernels/train_kernels.hpp"
#include "tests/gpu/cuda_test_backend.hpp"
#include "workloads/train_step.hpp"

namespace fb {
namespace {

MpiContext& mpi() {
  return gpu_test::test_mpi();
}
using gpu_test::cuda_backend;

template <typename T>
DeviceBuffer upload(Backend& b, const std::vector<T>& v) {
  auto buf = b.allocate(v.size() * sizeof(T));
  b.copy_to_device(buf, v.data(), v.size() * sizeof(T));
  return buf;
}
template <typename T>
std::vector<T> download(Backend& b, const DeviceBuffer& buf, std::size_t n) {
  std::vector<T> v(n);
  b.copy_to_host(v.data(), buf, n * sizeof(T));
  return v;
}
std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.uniform() * 4.0 - 2.0);
  return v;
}

TEST(MoeKernelsCuda, RoutingPermuteAndUnpermuteMatchTheHostReference) {
  std::string reason;
  auto backend = cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  auto dev = kernels::make_train_kernels(*backend);
  auto ref = kernels::make_host_train_kernels();
  const std::int64_t tokens = 1000, experts = 64, k = 8, width = 256;
  const auto logits = random_values(tokens * experts, 1);
  const auto x = random_values(tokens * width, 2);
  std::vector<float> bias(experts);
  for (int e = 0; e < experts; ++e) bias[e] = -0.5f * std::log1p(static_cast<float>(e));

  std::vector<std::int32_t> idx(tokens * k), row(tokens * k);
  std::vector<float> w(tokens * k), permuted(tokens * k * width), y(tokens * width);
  std::vector<std::int64_t> counts(experts), host_counts(experts);
  ref->route_topk(logits.data(), DType::fp32, tokens, experts, k, bias.data(), idx.data(), w.data());
  ref->build_permutation(idx.data(), tokens * k, experts, counts.data(), row.data(), host_counts.data());
  ref->permute(x.data(), DType::fp32, tokens, k, width, row.data(), nullptr, permuted.data());
  ref->unpermute(permuted.data(), DType::fp32, tokens, k, width, row.data(), w.data(), y.data(), false);

  auto d_logits = upload(*backend, logits), d_bias = upload(*backend, bias), d_x = upload(*backend, x);
  auto d_idx = backend->allocate(idx.size() * 4), d_w = backend->allocate(w.size() * 4);
  auto d_row = backend->allocate(row.size() * 4), d_counts = backend->allocate(experts * 8);
  auto d_perm = backend->allocate(permuted.size() * 4), d_y = backend->allocate(y.size() * 4);
  std::vector<std::int64_t> dev_counts(experts);
  dev->route_topk(d_logits.data(), DType::fp32, tokens, experts, k, d_bias.as<float>(),
                  d_idx.as<std::int32_t>(), d_w.as<float>());
  dev->build_permutation(d_idx.as<std::int32_t>(), tokens * k, experts, d_counts.as<std::int64_t>(),
                         d_row.as<std::int32_t>(), dev_counts.data());
  dev->permute(d_x.data(), DType::fp32, tokens, k, width, d_row.as<std::int32_t>(), nullptr, d_perm.data());
  dev->unpermute(d_perm.data(), DType::fp32, tokens, k, width, d_row.as<std::int32_t>(), d_w.as<float>(),
                 d_y.data(), false);
  backend->synchronize();
  EXPECT_EQ(download<std::int32_t>(*backend, d_idx, idx.size()), idx);
  EXPECT_EQ(dev_counts, host_counts);
  EXPECT_EQ(download<std::int32_t>(*backend, d_row, row.size()), row);
  const auto dw = download<float>(*backend, d_w, w.size());
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(dw[i], w[i], 1e-5) << i;
  EXPECT_EQ(download<float>(*backend, d_perm, permuted.size()), permuted);
  const auto dy = download<float>(*backend, d_y, y.size());
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(dy[i], x[i], 1e-4) << i;  // weights sum to 1
}

TEST(MoeKernelsCuda, SoftmaxActivationsAndAdamMatchTheHostReference) {
  std::string reason;
  auto backend = cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  auto dev = kernels::make_train_kernels(*backend);
  auto ref = kernels::make_host_train_kernels();
  const std::int64_t keys = 1024, queries = 512, batch = 3;
  auto s = random_values(keys * queries * batch, 5);
  auto d_s = upload(*backend, s);
  ref->causal_softmax(s.data(), DType::fp32, keys, queries, 512, batch, keys * queries, 0.125f);
  dev->causal_softmax(d_s.data(), DType::fp32, keys, queries, 512, batch, keys * queries, 0.125f);
  const auto got = download<float>(*backend, d_s, s.size());
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_NEAR(got[i], s[i], 1e-6) << i;

  const std::int64_t f = 300, n = 70;
  const auto up = random_values(2 * f * n, 6);
  std::vector<float> out(f * n);
  ref->activation_forward(true, up.data(), DType::fp32, f, n, out.data());
  auto d_up = upload(*backend, up);
  auto d_out = backend->allocate(out.size() * 4);
  dev->activation_forward(true, d_up.data(), DType::fp32, f, n, d_out.data());
  const auto dout = download<float>(*backend, d_out, out.size());
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(dout[i], out[i], 1e-5) << i;

  std::vector<float> master = random_values(4096, 8), m(4096, 0.0f), v(4096, 0.0f), param(4096);
  const auto grad = random_values(4096, 9);
  auto d_master = upload(*backend, master), d_m = upload(*backend, m), d_v = upload(*backend, v);
  auto d_grad = upload(*backend, grad);
  auto d_param = backend->allocate(4096 * 4);
  kernels::AdamParams p;
  ref->adam_update(param.data(), grad.data(), DType::fp32, master.data(), m.data(), v.data(), 4096, p);
  dev->adam_update(d_param.data(), d_grad.data(), DType::fp32, d_master.as<float>(), d_m.as<float>(),
                   d_v.as<float>(), 4096, p);
  const auto dp = download<float>(*backend, d_param, 4096);
  for (int i = 0; i < 4096; ++i) ASSERT_NEAR(dp[i], param[i], 1e-6) << i;
  EXPECT_NEAR(dev->sum_squares(d_grad.data(), DType::fp32, 4096),
              ref->sum_squares(grad.data(), DType::fp32, 4096), 1e-2);
}

TEST(TrainCuda, TinyMoeStepsOnOneGpu) {
  std::string reason;
  auto backend = cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  workloads::TrainOptions o;
  o.model = "tiny-moe";
  o.shape.dtype = DType::bf16;
  o.steps = 3;
  o.warmup_steps = 1;
  const auto run = workloads::run_training(o, mpi(), *backend, nullptr);
  EXPECT_EQ(run.steps_run, 3);
  EXPECT_EQ(run.step_seconds.size(), 2u);
  EXPECT_TRUE(std::isfinite(run.loss));
  EXPECT_EQ(run.dispatch_sent_rows, run.dispatch_received_rows);
}

}  // namespace
}  // namespace fb
