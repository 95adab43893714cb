#include "workloads/model_flops.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "workloads/model_config.hpp"
#include "workloads/train_step.hpp"

namespace fb::workloads {
namespace {

double gflop(const char* model, AttentionFlops a, std::int64_t mtp = -1) {
  auto m = load_model(model);
  if (mtp >= 0) m.mtp_layers = mtp;
  return model_flops_per_token(m, m.seq, a).total() / 1e9;
}

// Known answers: shared/REFERENCES.md (Megatron-LM num_floating_point_operations, GFLOP per token).
TEST(ModelFlops, Llama3MatchesMegatron) {
  EXPECT_NEAR(gflop("llama3-8b", AttentionFlops::causal), 51.47, 0.01);
  EXPECT_NEAR(gflop("llama3-8b", AttentionFlops::full), 57.91, 0.01);
  EXPECT_NEAR(gflop("llama3-70b", AttentionFlops::causal), 449.2, 0.1);
  EXPECT_NEAR(gflop("llama3-70b", AttentionFlops::full), 481.4, 0.1);
}

TEST(ModelFlops, Gpt3MatchesMegatron) {
  EXPECT_NEAR(gflop("gpt3-175b", AttentionFlops::causal), 1062, 1);
  EXPECT_NEAR(gflop("gpt3-175b", AttentionFlops::full), 1076, 1);
}

TEST(ModelFlops, DeepSeekV3WithAndWithoutMtp) {
  EXPECT_NEAR(gflop("deepseek-v3", AttentionFlops::causal, 0), 249.8, 0.1);
  EXPECT_NEAR(gflop("deepseek-v3", AttentionFlops::causal, 1), 260.0, 0.1);
}

TEST(ModelFlops, LayersCountsOnlyWhatRuns) {
  // train --layers 5 on deepseek-v3 instantiates 5 layers and no MTP layer (docs/train.md), so the FLOPs,
  // parameters and MFU leave the MTP layer out. Megatron's count for those 5 layers (3 dense, 2 MoE) at
  // seq 2048: 24.32 GFLOP per token; with the MTP layer it would be 34.25.
  TrainOptions o;
  o.model = "deepseek-v3";
  o.layers = 5;
  o.shape.seq = 2048;
  o.parallel.dp = 1;
  const auto plan = prepare_training(o, 1);
  EXPECT_EQ(plan.model.mtp_layers, 0);
  EXPECT_EQ(plan.flops.mtp_projection, 0.0);
  EXPECT_NEAR(plan.flops.total() / 1e9, 24.32, 0.01);
  auto five = load_model("deepseek-v3");
  five.layers = 5;
  five.mtp_layers = 0;
  EXPECT_EQ(plan.params.total, parameter_counts(five).total);
}

TEST(ModelFlops, ComponentsSumAndScaleAsDocumented) {
  const auto m = load_model("llama3-8b");
  const auto f = model_flops_per_token(m, m.seq);
  // logits 6·h·V exactly.
  EXPECT_DOUBLE_EQ(f.logits, 6.0 * 4096 * 128256);
  // Full attention doubles only the core term.
  const auto full = model_flops_per_token(m, m.seq, AttentionFlops::full);
  EXPECT_DOUBLE_EQ(full.attention_core, 2 * f.attention_core);
  EXPECT_DOUBLE_EQ(full.mlp_dense, f.mlp_dense);
  // SwiGLU is 3/2 of GeLU for the same ffn.
  auto gelu = m;
  gelu.activation = Activation::gelu;
  EXPECT_DOUBLE_EQ(model_flops_per_token(gelu, m.seq).mlp_dense * 1.5, f.mlp_dense);
  EXPECT_EQ(f.moe_routed, 0);
}

TEST(ModelFlops, HardwareFlopsCountRecompute) {
  const auto m = load_model("gpt3-175b");
  const auto f = model_flops_per_token(m, m.seq);
  EXPECT_DOUBLE_EQ(hardware_flops_per_token(f, Recompute::none), f.total());
  EXPECT_DOUBLE_EQ(hardware_flops_per_token(f, Recompute::selective), f.total() + f.attention_core / 3);
  // Full recompute: 8/6 of the layer FLOPs (the "8N vs 6N" rule), logits once.
  EXPECT_NEAR(hardware_flops_per_token(f, Recompute::full), (f.total() - f.logits) * 4 / 3 + f.logits, 1);
  EXPECT_THROW(parse_recompute("some"), Error);
  EXPECT_THROW(parse_attention_flops("half"), Error);
}

TEST(ParameterCounts, PublishedSizes) {
  // Llama 3 8B: 8.03 B; 70B: 70.6 B; 405B: 405.9 B (untied embeddings, Meta model cards).
  EXPECT_NEAR(parameter_counts(load_model("llama3-8b")).total / 1e9, 8.03, 0.01);
  EXPECT_NEAR(parameter_counts(load_model("llama3-70b")).total / 1e9, 70.55, 0.05);
  EXPECT_NEAR(parameter_counts(load_model("llama3.1-405b")).total / 1e9, 405.85, 0.1);
  // Mixtral 8x7B: 46.7 B total, 12.9 B active.
  const auto mx = parameter_counts(load_model("mixtral-8x7b"));
  EXPECT_NEAR(mx.total / 1e9, 46.70, 0.05);
  EXPECT_NEAR(mx.active / 1e9, 12.88, 0.05);
  // DeepSeek-V3: 671 B main model + 14 B MTP module = 685 B; 37 B active. The published 14 B includes the
  // checkpoint's copies of the embedding and output head (2·V·h), which the MTP module shares.
  auto ds = load_model("deepseek-v3");
  EXPECT_NEAR(parameter_counts(ds).total / 1e9, 685 - 2 * 129280.0 * 7168 / 1e9, 1.5);
  ds.mtp_layers = 0;
  EXPECT_NEAR(parameter_counts(ds).total / 1e9, 671, 1.5);
  EXPECT_NEAR(parameter_counts(ds).active / 1e9, 37.5, 1.0);
}

}  // namespace
}  // namespace fb::workloads
