#include "workloads/parallel_layout.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

std::string layout_error(const ModelConfig& m, ParallelConfig c, std::int64_t world) {
  try {
    validate_layout(m, c, world);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  ADD_FAILURE() << "accepted tp " << c.tp << " dp " << c.dp << " ep " << c.ep << " pp " << c.pp;
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ParallelLayout, ValidationNamesTheFailingConstraint) {
  const auto l8 = load_model("llama3-8b");
  EXPECT_NO_THROW(validate_layout(l8, {8, 4, 1, 2}, 64));
  EXPECT_TRUE(has(layout_error(l8, {2, 2, 1, 1}, 8), "world size must equal T·D·P"));
  EXPECT_TRUE(has(layout_error(l8, {3, 1, 1, 1}, 3), "--tp 3 does not divide llama3-8b's heads (32)"));
  EXPECT_NO_THROW(validate_layout(l8, {16, 1, 1, 1}, 16));  // kv heads replicated: 16 % 8 == 0
  EXPECT_TRUE(has(layout_error(load_model("mixtral-8x22b"), {6, 1, 1, 1}, 6), "kv_heads (8)"));
  EXPECT_TRUE(has(layout_error(l8, {1, 2, 2, 1}, 2), "has no experts"));
  EXPECT_TRUE(has(layout_error(l8, {0, 1, 1, 1}, 1), "--tp 0"));
  const auto mx = load_model("mixtral-8x7b");
  EXPECT_NO_THROW(validate_layout(mx, {2, 4, 8, 1}, 8));
  EXPECT_TRUE(has(layout_error(mx, {1, 6, 3, 1}, 6), "--ep 3 does not divide mixtral-8x7b's experts (8)"));
  EXPECT_TRUE(has(layout_error(mx, {1, 2, 4, 1}, 2), "--ep 4 does not divide --dp x --tp"));
  EXPECT_TRUE(has(layout_error(load_model("tiny-dense"), {1, 1, 1, 3}, 3), "--pp 3 does not divide"));
}

TEST(ParallelLayout, RankCoordinatesPutTensorParallelInnermost) {
  const ParallelConfig c{2, 2, 2, 1};
  // rank = d·T + t; EP groups are consecutive blocks of E ranks of the D·T ranks.
  EXPECT_EQ(rank_coords(3, c).t, 1);
  EXPECT_EQ(rank_coords(3, c).d, 1);
  EXPECT_EQ(rank_coords(3, c).ep_group, 1);
  EXPECT_EQ(rank_coords(3, c).ep_rank, 1);
  const ParallelConfig moe{1, 4, 2, 1};
  EXPECT_EQ(rank_coords(2, moe).ep_group, 1);
  EXPECT_EQ(rank_coords(2, moe).ep_rank, 0);
}

TEST(ParallelLayout, PlanShapesForLlama3_8bAtTp2) {
  StepShape s;
  s.micro_batch = 1;
  s.dtype = DType::bf16;
  const auto plan = make_plan(load_model("llama3-8b"), {2, 1, 1, 1}, s);
  EXPECT_EQ(plan.local.tokens, 8192);
  EXPECT_EQ(plan.local.heads, 16);
  EXPECT_EQ(plan.local.kv_heads, 4);
  EXPECT_EQ(plan.local.qkv_width, (16 + 2 * 4) * 128);
  EXPECT_EQ(plan.local.ffn, 7168);
  EXPECT_EQ(plan.local.vocab, 64128);
  const auto find = [&](const std::string& role, const std::string& pass) -> const PlanGemm& {
    for (const auto& g : plan.gemms)
      if (g.gemm.role == role && g.gemm.pass == pass) return g;
    ADD_FAILURE() << "no " << role << "/" << pass;
    return plan.gemms.front();
  };
  const auto& qkv = find("qkv", "fwd").gemm.problem;
  EXPECT_EQ(qkv.m * qkv.n * qkv.k, 8192LL * 3072 * 4096);
  const auto& up = find("mlp_up", "fwd").gemm.problem;
  EXPECT_EQ(up.m, 2 * 7168);  // SwiGLU gate and up fused
  EXPECT_EQ(up.n, 8192);
  EXPECT_EQ(up.k, 4096);
  const auto& down = find("mlp_down", "wgrad").gemm.problem;
  EXPECT_EQ(down.m, 7168);
  EXPECT_EQ(down.n, 4096);
  EXPECT_EQ(down.k, 8192);
  EXPECT_EQ(find("mlp_down", "fwd").layers, 32);
  const auto& logits = find("logits", "fwd").gemm.problem;
  EXPECT_EQ(logits.m, 64128);
  const auto& scores = find("attn_scores", "fwd");
  EXPECT_EQ(scores.gemm.problem.batch, 4);    // kv groups per rank
  EXPECT_EQ(scores.calls_per_layer, 4 * 16);  // heads per group x query blocks (8192 / 512)
  // TP all-reduce of the 8192 x 4096 bf16 activations, 4 per layer and one for the output layer.
  ASSERT_FALSE(plan.collectives.empty());
  EXPECT_EQ(plan.collectives[0].name, "tp_allreduce/layer_out");
  EXPECT_DOUBLE_EQ(plan.collectives[0].bytes_per_call, 8192.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(plan.collectives[0].calls_per_step, 4 * 32 + 1);
  EXPECT_NEAR(plan.flops.total() / 1e9, 51.47, 0.01);
  EXPECT_DOUBLE_EQ(plan.flops_per_step, plan.flops.total() * 8192);
}

TEST(ParallelLayout, GemmFlopsOfThePlanCoverTheModelCount) {
  // Summing 2mnk·batch·calls·layers over the plan's GEMMs reproduces the model FLOPs within the diagonal
  // blocks' extra work (causal attention computes whole diagonal blocks) for a dense model.
  StepShape s;
  const auto m = load_model("llama3-8b");
  const auto plan = make_plan(m, {1, 1, 1, 1}, s);
  double flops = 0;
  const std::int64_t B = plan.local.attn_block, nb = plan.local.seq / B;
  for (const auto& g : plan.gemms) {
    const auto& p = g.gemm.problem;
    double f = 2.0 * p.m * p.n * p.k * p.batch * g.calls_per_layer * g.layers;
    if (g.gemm.role.rfind("attn_s", 0) == 0 || g.gemm.role.rfind("attn_c", 0) == 0)
      f = f * (nb + 1) / (2.0 * nb);  // listed at the largest strip; the average strip is (nb+1)/2 blocks
    flops += f;
  }
  const double model = plan.flops.total() * plan.local.tokens;
  EXPECT_GT(flops, model);
  EXPECT_LT(flops, model * 1.02);
}

TEST(ParallelLayout, MemoryEstimateAndFitCheck) {
  StepShape s;
  s.dtype = DType::bf16;
  const auto m = load_model("llama3-70b");
  const auto est = estimate_memory(m, {1, 1, 1, 1}, s);
  // 70.6 B parameters: 2 B weights + 2 B gradients + 12 B optimizer each (no embedding lookup: −1 B params).
  EXPECT_NEAR(static_cast<double>(est.weights + est.gradients + est.optimizer) / 16 / 1e9, 69.5, 0.5);
  try {
    check_fits(est, std::uint64_t{141} << 30, m, {1, 1, 1, 1}, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "llama3-70b does not fit")) << e.what();
    EXPECT_TRUE(has(e.what(), "--layers")) << e.what();
  }
  EXPECT_NO_THROW(check_fits(est, est.total(), m, {1, 1, 1, 1}, s));
  StepShape zero = s;
  zero.distributed_optimizer = true;
  EXPECT_LT(estimate_memory(m, {1, 8, 1, 1}, zero).optimizer, est.optimizer / 7);
}

}  // namespace
}  // namespace fb::workloads
