// The training step's gradients against finite differences of its own loss (host backend, fp32, one rank):
// every part of the step — embedding lookup and scatter-add, RMSNorms with their fused residual adds, rotary
// embedding, the attention core (blocked GEMMs and the fused reference engine), MLA's latent norms and key
// assembly, MoE routing and grouped expert GEMMs, the output layer — must differentiate the loss it reports.
// The parameters the step instantiates must also be the ones the plan counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/host_backend.hpp"
#include "core/mpi_context.hpp"
#include "core/random_fill.hpp"
#include "workloads/model_flops.hpp"
#include "workloads/train_step.hpp"

namespace fb::workloads {
namespace {

MpiContext& mpi() {
  static MpiContext context(nullptr, nullptr);  // singleton MPI: a world of one process
  return context;
}

// Runs one step from `start` (or the initial weights): the loss it reports, the state before and after.
struct Probe final : TrainHooks {
  const std::vector<std::byte>* start = nullptr;
  std::vector<std::byte> before, after;
  TrainStateAccess* state = nullptr;
  double loss = 0, grad_norm = 0;
  std::int64_t on_start(TrainStateAccess& s) override {
    state = &s;
    if (start) s.restore(*start);
    before.resize(s.bytes());
    s.snapshot(before);
    return 0;
  }
  bool after_step(std::int64_t, const StepOutcome& outcome) override {
    loss = outcome.loss;
    grad_norm = outcome.grad_norm;
    after.resize(state->bytes());
    state->snapshot(after);
    return false;  // one step is enough
  }
};

TrainOptions options(const char* model, kernels::AttentionEngineChoice engine) {
  TrainOptions o;
  o.model = model;
  o.shape.dtype = DType::fp32;
  o.shape.seq = 64;  // two attention blocks of 32: the causal strips are exercised
  o.steps = 2;
  o.warmup_steps = 1;
  o.seed = 11;
  o.attention_engine = engine;
  return o;
}

float master_at(const std::vector<std::byte>& s, std::size_t i) {
  float v;
  std::memcpy(&v, s.data() + 4 * i, 4);
  return v;
}

// Element i of the fp32 master weights: the dense region's first, then (after the dense m and v) the
// expert region's. Returns the byte offset in a snapshot.
std::size_t master_offset(std::int64_t dense, std::int64_t i) {
  return static_cast<std::size_t>(i < dense ? i : 3 * dense + (i - dense)) * 4;
}
std::size_t moment_offset(std::int64_t dense, std::int64_t experts, std::int64_t i) {
  return static_cast<std::size_t>(i < dense ? dense + i : 3 * dense + experts + (i - dense)) * 4;
}

void check_gradients(const char* model, kernels::AttentionEngineChoice engine) {
  HostBackend backend(1);
  const auto o = options(model, engine);
  const auto plan = prepare_training(o, 1);
  const std::int64_t dense = plan.local.dense_params, experts = plan.local.expert_params, n = dense + experts;

  Probe base;
  run_training(o, plan, mpi(), backend, &base);
  ASSERT_EQ(base.after.size(), static_cast<std::size_t>(12 * n))
      << "the step holds the parameters the plan counts";
  const std::vector<std::byte> init = base.before;
  // Adam's first moment after one step: m = (1 − β1)·g with g the step's gradient, which the step seeds
  // with 2/T · logits = V · dL/dlogits (the reported loss is the mean over T·V logits).
  const double beta1 = 0.9, V = static_cast<double>(plan.local.vocab);
  std::vector<double> grad(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    float m;
    std::memcpy(&m, base.after.data() + moment_offset(dense, experts, i), 4);
    grad[static_cast<std::size_t>(i)] = m / (1 - beta1) / V;
  }
  // The reported gradient norm is that of the loss's own gradient (the V of the seed taken out).
  double sum_squares = 0;
  for (const double g : grad) sum_squares += g * g;
  EXPECT_NEAR(base.grad_norm, std::sqrt(sum_squares), 1e-5 * std::sqrt(sum_squares));
  const double scale = std::fabs(*std::max_element(
      grad.begin(), grad.end(), [](double a, double b) { return std::fabs(a) < std::fabs(b); }));
  // Probes: directions u in parameter space, each compared as Σ g·u against the central difference of the
  // loss along u. Single parameters: the 10 largest gradients and 10 random parameters. Blocks, random ±1
  // over: the embedding table (the dense region's first tensor), every norm gain (the parameters that start
  // at exactly 1), and, for MoE, the expert region.
  using Direction = std::vector<std::pair<std::int64_t, float>>;
  std::vector<std::pair<std::string, Direction>> probes;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::partial_sort(order.begin(), order.begin() + 10, order.end(),
                    [&](auto a, auto b) { return std::fabs(grad[a]) > std::fabs(grad[b]); });
  SplitMix64 rng(5);
  for (int k = 0; k < 20; ++k) {
    const std::int64_t i = k < 10 ? order[static_cast<std::size_t>(k)]
                                  : static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(n));
    probes.push_back({"parameter " + std::to_string(i), {{i, 1.0f}}});
  }
  const auto block = [&](const std::string& name, auto&& member) {
    Direction u;
    for (std::int64_t i = 0; i < n; ++i)
      if (member(i)) u.push_back({i, rng.next() % 2 ? 1.0f : -1.0f});
    ASSERT_FALSE(u.empty()) << name;
    probes.push_back({name, std::move(u)});
  };
  block("embedding table", [&](std::int64_t i) { return i < plan.local.vocab * plan.model.hidden; });
  block("norm gains", [&](std::int64_t i) { return master_at(init, master_offset(dense, i) / 4) == 1.0f; });
  if (experts > 0) block("expert weights", [&](std::int64_t i) { return i >= dense; });

  for (const auto& [name, u] : probes) {
    const float eps =
        u.size() == 1
            ? 1e-3f * std::max(1.0f, std::fabs(master_at(init, master_offset(dense, u[0].first) / 4)))
            : 1e-3f;
    double loss[2];
    for (int side = 0; side < 2; ++side) {
      auto s = init;
      for (const auto& [i, ui] : u) {
        float w;
        std::memcpy(&w, s.data() + master_offset(dense, i), 4);
        w += (side == 0 ? eps : -eps) * ui;
        std::memcpy(s.data() + master_offset(dense, i), &w, 4);
      }
      Probe p;
      p.start = &s;
      run_training(o, plan, mpi(), backend, &p);
      loss[side] = p.loss;
    }
    double dot = 0, magnitude = 0;
    for (const auto& [i, ui] : u) {
      dot += grad[static_cast<std::size_t>(i)] * ui;
      magnitude += std::fabs(grad[static_cast<std::size_t>(i)]);
    }
    const double numeric = (loss[0] - loss[1]) / (2.0 * eps);
    EXPECT_NEAR(dot, numeric, 0.02 * magnitude + 1e-3 * std::fabs(scale))
        << model << ": " << name << " (" << u.size() << " parameters)";
  }
}

TEST(TrainGradientCheck, DenseModelWithBlockedAttention) {
  check_gradients("tiny-dense", kernels::AttentionEngineChoice::gemm);
}
TEST(TrainGradientCheck, DenseModelWithTheFusedReferenceAttention) {
  check_gradients("tiny-dense", kernels::AttentionEngineChoice::reference);
}
TEST(TrainGradientCheck, MoeModel) {
  check_gradients("tiny-moe", kernels::AttentionEngineChoice::gemm);
}
TEST(TrainGradientCheck, MlaModel) {
  check_gradients("tiny-mla", kernels::AttentionEngineChoice::gemm);
}

// Tensor, data and expert parallelism off: the parameters the step holds are the model's (embedding, every
// norm, output layer), as parameter_counts counts them for the FLOP and MFU figures.
TEST(TrainParameters, TheStepHoldsEveryCountedParameter) {
  for (const char* name : {"tiny-dense", "tiny-moe", "tiny-mla", "llama3-8b", "mixtral-8x7b", "gpt3-175b"}) {
    auto o = options(name, kernels::AttentionEngineChoice::gemm);
    const auto plan = prepare_training(o, 1);
    EXPECT_EQ(static_cast<double>(plan.local.dense_params + plan.local.expert_params), plan.params.total)
        << name;
  }
}

// A run that resumes from its final checkpoint runs no step and has still reached the end: on_finish gets
// the step reached (a supervisor read the 0 it used to get as a relaunch that trained nothing, and spent its
// restarts on a finished job).
TEST(TrainHooksTest, OnFinishGetsTheStepReachedWhenNothingIsLeftToRun) {
  struct Resumed final : TrainHooks {
    std::int64_t finished_at = -1;
    int steps_run = 0;
    std::int64_t on_start(TrainStateAccess&) override { return 2; }  // as from a checkpoint of step 2
    void before_step(std::int64_t) override { ++steps_run; }
    void on_finish(std::int64_t last_step) override { finished_at = last_step; }
  } hooks;
  HostBackend backend(1);
  const auto o = options("tiny-dense", kernels::AttentionEngineChoice::gemm);  // --steps 2
  run_training(o, mpi(), backend, &hooks);
  EXPECT_EQ(hooks.steps_run, 0);
  EXPECT_EQ(hooks.finished_at, 2);
}

}  // namespace
}  // namespace fb::workloads
