// The training step on one GPU against the host backend and against itself: fp32 losses and gradient norms
// equal the host's (every kernel, norm, rotary embedding, embedding scatter-add and the multi-tensor Adam),
// cuDNN's fused attention gives the blocked GEMMs' model in bf16, and the experts' grouped GEMM equals one
// GEMM per expert. Skips without a GPU (and the cuDNN cases without cuDNN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/cudnn_library.hpp"
#include "core/host_backend.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/attention_engine.hpp"
#include "kernels/gemm_engine.hpp"
#include "tests/gpu/cuda_test_backend.hpp"
#include "workloads/train_step.hpp"

namespace fb {
namespace {

using gpu_test::cuda_backend;
using gpu_test::test_mpi;

workloads::TrainOptions tiny(const char* model, DType dtype, kernels::AttentionEngineChoice engine) {
  workloads::TrainOptions o;
  o.model = model;
  o.shape.dtype = dtype;
  o.steps = 3;
  o.warmup_steps = 1;
  o.seed = 7;
  o.attention_engine = engine;
  return o;
}

TEST(TrainStepCuda, Fp32MatchesTheHostBackend) {
  std::string reason;
  auto gpu = cuda_backend(reason);
  if (!gpu) GTEST_SKIP() << reason;
  HostBackend host(1);
  for (const char* model : {"tiny-dense", "tiny-moe", "tiny-mla"}) {
    const auto o = tiny(model, DType::fp32, kernels::AttentionEngineChoice::gemm);
    const auto on_gpu = workloads::run_training(o, test_mpi(), *gpu, nullptr);
    const auto on_host = workloads::run_training(o, test_mpi(), host, nullptr);
    EXPECT_EQ(on_gpu.attention_engine, "gemm");
    EXPECT_NEAR(on_gpu.loss / on_host.loss, 1.0, 1e-5) << model;
    EXPECT_NEAR(on_gpu.grad_norm / on_host.grad_norm, 1.0, 1e-5) << model;
  }
}

// The same seed gives the same loss and gradient norm bits on a second run: no atomics in the reported sums
// (kernels/cuda/ordered_sum.cuh), and the step's kernels and GEMM plans are deterministic.
TEST(TrainStepCuda, ASecondRunRepeatsTheLossBitForBit) {
  std::string reason;
  auto gpu = cuda_backend(reason);
  if (!gpu) GTEST_SKIP() << reason;
  for (const char* model : {"tiny-dense", "tiny-moe"}) {
    const auto o = tiny(model, DType::bf16, kernels::AttentionEngineChoice::gemm);
    const auto first = workloads::run_training(o, test_mpi(), *gpu, nullptr);
    const auto second = workloads::run_training(o, test_mpi(), *gpu, nullptr);
    EXPECT_EQ(first.loss, second.loss) << model;
    EXPECT_EQ(first.grad_norm, second.grad_norm) << model;
  }
}

// Activation recomputation runs the same kernels on the same inputs again: selective and full give the
// loss and gradient norm bits of the step that keeps its activations (tests/mpi/train_recompute.sh checks
// the host backend on every layout).
TEST(TrainStepCuda, RecomputationRepeatsTheStepBitForBit) {
  std::string reason;
  auto gpu = cuda_backend(reason);
  if (!gpu) GTEST_SKIP() << reason;
  for (const char* model : {"tiny-dense", "tiny-moe", "tiny-mla"}) {
    auto o = tiny(model, DType::bf16, kernels::AttentionEngineChoice::gemm);
    const auto kept = workloads::run_training(o, test_mpi(), *gpu, nullptr);
    for (const auto mode : {workloads::Recompute::selective, workloads::Recompute::full}) {
      o.shape.recompute = mode;
      const auto again = workloads::run_training(o, test_mpi(), *gpu, nullptr);
      EXPECT_EQ(again.loss, kept.loss) << model << " " << to_string(mode);
      EXPECT_EQ(again.grad_norm, kept.grad_norm) << model << " " << to_string(mode);
    }
  }
}

TEST(TrainStepCuda, CudnnAttentionTrainsTheSameModelAsTheBlockedGemms) {
  std::string reason;
  auto gpu = cuda_backend(reason);
  if (!gpu) GTEST_SKIP() << reason;
  if (!cudnn_attention_compiled_in() || !cudnn_library().handle) GTEST_SKIP() << cudnn_library().error;
  for (const char* model : {"tiny-dense", "tiny-mla"}) {
    auto o = tiny(model, DType::bf16, kernels::AttentionEngineChoice::gemm);
    const auto blocked = workloads::run_training(o, test_mpi(), *gpu, nullptr);
    o.attention_engine = kernels::AttentionEngineChoice::automatic;
    const auto fused = workloads::run_training(o, test_mpi(), *gpu, nullptr);
    EXPECT_EQ(blocked.attention_engine, "gemm");
    EXPECT_EQ(fused.attention_engine, "cudnn") << model << ": auto did not pick cuDNN";
    // bf16 rounds probabilities and gradients differently inside the fused kernels: a few parts in 100.
    EXPECT_NEAR(fused.loss / blocked.loss, 1.0, 3e-2) << model;
    EXPECT_NEAR(fused.grad_norm / blocked.grad_norm, 1.0, 5e-2) << model;
    EXPECT_TRUE(fused.plan.shape.fused_attention);
    EXPECT_LT(fused.plan.memory.activations, blocked.plan.memory.activations)
        << "no probability blocks saved";
  }
}

TEST(TrainStepCuda, AutoFallsBackToGemmForFp32) {
  std::string reason;
  auto gpu = cuda_backend(reason);
  if (!gpu) GTEST_SKIP() << reason;
  const auto run = workloads::run_training(
      tiny("tiny-dense", DType::fp32, kernels::AttentionEngineChoice::automatic), test_mpi(), *gpu, nullptr);
  EXPECT_EQ(run.attention_engine, "gemm");  // cuDNN attention takes bf16 and fp16
}

// The experts' three passes (forward, dgrad, wgrad with beta 1) as one grouped call, an empty expert among
// them, against one GEMM per expert.
TEST(TrainStepCuda, GroupedExpertGemmsEqualOneGemmPerExpert) {
  std::string reason;
  auto gpu = cuda_backend(reason);
  if (!gpu) GTEST_SKIP() << reason;
  auto engine = kernels::make_gemm_engine(*gpu, DType::bf16);
  const std::int64_t in = 256, out = 512, rows[4] = {96, 0, 40, 136};
  SplitMix64 rng(3);
  const auto random_bf16 = [&](std::size_t n) {
    std::vector<std::uint16_t> v(n);
    for (auto& x : v) x = float_to_bf16(static_cast<float>(rng.uniform() * 2 - 1));
    auto buf = gpu->allocate(n * 2);
    gpu->copy_to_device(buf, v.data(), n * 2);
    return buf;
  };
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<kernels::GemmProblem> problems;
    std::vector<DeviceBuffer> a, b, c1, c2;
    for (const std::int64_t n : rows) {
      kernels::GemmProblem p;
      p.dtype = DType::bf16;
      if (pass == 0) p.m = out, p.n = n, p.k = in, p.transa = true;              // y = Wᵀx
      if (pass == 1) p.m = in, p.n = n, p.k = out;                               // dx = W·dy
      if (pass == 2) p.m = in, p.n = out, p.k = n, p.transb = true, p.beta = 1;  // dW += x·dyᵀ
      problems.push_back(p);
      const std::size_t ea = static_cast<std::size_t>(std::max<std::int64_t>(1, p.elements_a()));
      const std::size_t eb = static_cast<std::size_t>(std::max<std::int64_t>(1, p.elements_b()));
      const std::size_t ec = static_cast<std::size_t>(std::max<std::int64_t>(1, p.elements_c()));
      a.push_back(random_bf16(ea));
      b.push_back(random_bf16(eb));
      c1.push_back(random_bf16(ec));
      c2.push_back(gpu->allocate(ec * 2));
      gpu->copy_device_to_device(c2.back(), c1.back(), ec * 2);
    }
    std::vector<const void*> pa, pb;
    std::vector<void*> pc;
    for (std::size_t e = 0; e < problems.size(); ++e) {
      pa.push_back(a[e].data()), pb.push_back(b[e].data()), pc.push_back(c1[e].data());
      if (problems[e].m && problems[e].n && problems[e].k)
        engine->run(problems[e], a[e].data(), b[e].data(), c2[e].data());
    }
    engine->run_grouped(problems, pa, pb, pc);
    gpu->synchronize();
    for (std::size_t e = 0; e < problems.size(); ++e) {
      const std::size_t n = c1[e].bytes() / 2;
      std::vector<std::uint16_t> g1(n), g2(n);
      gpu->copy_to_host(g1.data(), c1[e], n * 2);
      gpu->copy_to_host(g2.data(), c2[e], n * 2);
      double worst = 0;
      for (std::size_t i = 0; i < n; ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(bf16_to_float(g1[i])) - bf16_to_float(g2[i])) /
                                    (1.0 + std::fabs(bf16_to_float(g2[i]))));
      EXPECT_LT(worst, 2e-2) << "pass " << pass << " expert " << e;
    }
  }
}

}  // namespace
}  // namespace fb
