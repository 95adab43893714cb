// Per-rank GEMM shapes of one transformer layer, hand-checked for Llama 3 8B (hidden 4096, 32 heads, 8 KV
// heads, head_dim 128, SwiGLU ffn 14336) at TP 1 and TP 8, seq 8192, micro-batch 1 (T = 8192 tokens).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "core/error.hpp"
#include "workloads/layer_gemm_shapes.hpp"
#include "workloads/model_config.hpp"
#include "workloads/model_flops.hpp"

using namespace fb::workloads;

namespace {

using Mnk =
    std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool>;  // m n k batch ta tb

std::map<std::string, Mnk> by_name(const std::vector<LayerGemm>& gemms) {
  std::map<std::string, Mnk> out;
  for (const auto& g : gemms)
    out[g.name] = {g.problem.m,     g.problem.n,      g.problem.k,
                   g.problem.batch, g.problem.transa, g.problem.transb};
  return out;
}

}  // namespace

TEST(LayerGemmShapes, Llama3_8B_Tp1) {
  const auto model = load_model("llama3-8b");
  LayerShapeOptions o;
  o.tp = 1;
  o.seq = 8192;
  const auto s = by_name(layer_gemm_shapes(model, o));
  ASSERT_EQ(s.size(), 12u);  // 4 linear layers × fwd, dgrad, wgrad
  // qkv: 4096 → (32 + 2·8)·128 = 6144.
  EXPECT_EQ(s.at("llama3-8b/tp1/qkv/fwd"), Mnk(6144, 8192, 4096, 1, true, false));
  EXPECT_EQ(s.at("llama3-8b/tp1/qkv/dgrad"), Mnk(4096, 8192, 6144, 1, false, false));
  EXPECT_EQ(s.at("llama3-8b/tp1/qkv/wgrad"), Mnk(4096, 6144, 8192, 1, false, true));
  // attn_out: 32·128 = 4096 → 4096.
  EXPECT_EQ(s.at("llama3-8b/tp1/attn_out/fwd"), Mnk(4096, 8192, 4096, 1, true, false));
  // mlp_up: gate and up fused, 4096 → 2·14336 = 28672.
  EXPECT_EQ(s.at("llama3-8b/tp1/mlp_up/fwd"), Mnk(28672, 8192, 4096, 1, true, false));
  EXPECT_EQ(s.at("llama3-8b/tp1/mlp_up/wgrad"), Mnk(4096, 28672, 8192, 1, false, true));
  // mlp_down: 14336 → 4096.
  EXPECT_EQ(s.at("llama3-8b/tp1/mlp_down/fwd"), Mnk(4096, 8192, 14336, 1, true, false));
  EXPECT_EQ(s.at("llama3-8b/tp1/mlp_down/dgrad"), Mnk(14336, 8192, 4096, 1, false, false));
  EXPECT_EQ(s.at("llama3-8b/tp1/mlp_down/wgrad"), Mnk(14336, 4096, 8192, 1, false, true));
}

TEST(LayerGemmShapes, Llama3_8B_Tp8) {
  const auto model = load_model("llama3-8b");
  LayerShapeOptions o;
  o.tp = 8;
  o.seq = 8192;
  const auto s = by_name(layer_gemm_shapes(model, o));
  ASSERT_EQ(s.size(), 12u);
  // qkv per rank: 32/8 = 4 query heads + 2·(8/8 = 1) KV heads = 6 heads · 128 = 768.
  EXPECT_EQ(s.at("llama3-8b/tp8/qkv/fwd"), Mnk(768, 8192, 4096, 1, true, false));
  // attn_out (row parallel): 4·128 = 512 → 4096.
  EXPECT_EQ(s.at("llama3-8b/tp8/attn_out/fwd"), Mnk(4096, 8192, 512, 1, true, false));
  EXPECT_EQ(s.at("llama3-8b/tp8/attn_out/dgrad"), Mnk(512, 8192, 4096, 1, false, false));
  // mlp_up: 2·14336/8 = 3584; mlp_down: 14336/8 = 1792 → 4096.
  EXPECT_EQ(s.at("llama3-8b/tp8/mlp_up/fwd"), Mnk(3584, 8192, 4096, 1, true, false));
  EXPECT_EQ(s.at("llama3-8b/tp8/mlp_down/fwd"), Mnk(4096, 8192, 1792, 1, true, false));
  EXPECT_EQ(s.at("llama3-8b/tp8/mlp_down/wgrad"), Mnk(1792, 4096, 8192, 1, false, true));
}

TEST(LayerGemmShapes, MicroBatchMultipliesTokensAndSeqDefaultsToTheModel) {
  const auto model = load_model("llama3-8b");  // seq 8192
  LayerShapeOptions o;
  o.micro_batch = 2;
  o.backward = false;
  const auto g = layer_gemm_shapes(model, o);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].name, "llama3-8b/tp1/qkv/fwd");
  EXPECT_EQ(g[0].problem.n, 16384);
}

TEST(LayerGemmShapes, KvHeadsReplicatedBeyondTheirCount) {
  // Llama 3 70B: 64 heads, 8 KV heads. At TP 16 each rank holds 4 query heads and one (replicated) KV head.
  const auto model = load_model("llama3-70b");
  LayerShapeOptions o;
  o.tp = 16;
  o.seq = 4096;
  const auto s = by_name(layer_gemm_shapes(model, o));
  EXPECT_EQ(std::get<0>(s.at("llama3-70b/tp16/qkv/fwd")), (4 + 2) * 128);
}

TEST(LayerGemmShapes, MixtralExpertsAreBatchedWithBalancedTokens) {
  // Mixtral 8x7B, seq 4096: 4096·2/8 = 1024 tokens per expert; up 2·14336, down 14336 → 4096; router 4096
  // → 8.
  const auto model = load_model("mixtral-8x7b");
  LayerShapeOptions o;
  o.seq = 4096;
  const auto s = by_name(layer_gemm_shapes(model, o));
  EXPECT_EQ(s.count("mixtral-8x7b/tp1/mlp_up/fwd"), 0u);  // every layer is MoE
  EXPECT_EQ(s.at("mixtral-8x7b/tp1/router/fwd"), Mnk(8, 4096, 4096, 1, true, false));
  EXPECT_EQ(s.at("mixtral-8x7b/tp1/expert_up/fwd"), Mnk(28672, 1024, 4096, 8, true, false));
  EXPECT_EQ(s.at("mixtral-8x7b/tp1/expert_down/fwd"), Mnk(4096, 1024, 14336, 8, true, false));
  EXPECT_EQ(s.at("mixtral-8x7b/tp1/expert_down/wgrad"), Mnk(14336, 4096, 1024, 8, false, true));
}

TEST(LayerGemmShapes, DeepSeekV3MlaAndSharedExpert) {
  // DeepSeek-V3 TP 8, seq 4096: q_up 1536 → 16 heads·(128+64) = 3072; kv_down 7168 → 512+64 = 576;
  // kv_up 512 → 16·(128+128) = 4096; attn_out 16·128 = 2048 → 7168; each TP rank routes 4096/8 = 512
  // tokens, 512·8/256 = 16 per expert, experts whole (expert TP = 1, as the train step runs them): 7168 →
  // 2·2048 = 4096; shared 2048/8 = 256; dense MLP 18432/8 = 2304.
  const auto model = load_model("deepseek-v3");
  LayerShapeOptions o;
  o.tp = 8;
  const auto s = by_name(layer_gemm_shapes(model, o));
  EXPECT_EQ(s.at("deepseek-v3/tp8/q_down/fwd"), Mnk(1536, 4096, 7168, 1, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/q_up/fwd"), Mnk(3072, 4096, 1536, 1, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/kv_down/fwd"), Mnk(576, 4096, 7168, 1, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/kv_up/fwd"), Mnk(4096, 4096, 512, 1, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/attn_out/fwd"), Mnk(7168, 4096, 2048, 1, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/expert_up/fwd"), Mnk(4096, 16, 7168, 256, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/router/fwd"), Mnk(256, 512, 7168, 1, true, false));
  // An expert_ffn that TP does not divide is no obstacle: experts are not split (an audit found it refused).
  auto odd = load_model("tiny-moe");
  odd.moe->expert_ffn = 33;
  LayerShapeOptions tp2;
  tp2.tp = 2;
  EXPECT_EQ(std::get<0>(by_name(layer_gemm_shapes(odd, tp2)).at("tiny-moe/tp2/expert_down/fwd")), 128);
  EXPECT_EQ(s.at("deepseek-v3/tp8/shared_down/fwd"), Mnk(7168, 4096, 256, 1, true, false));
  EXPECT_EQ(s.at("deepseek-v3/tp8/mlp_down/fwd"), Mnk(7168, 4096, 2304, 1, true, false));
}

TEST(LayerGemmShapes, MlaProjectionsAreWhatTheFlopCountCounts) {
  // The train step builds its MLA weights from mla_projections; their fwd + dgrad + wgrad FLOPs per token
  // (6·in·out each) equal model_flops' attention projections less Megatron's LoRA-norm terms (6·(q_lora +
  // kv_lora) per layer), with or without query compression; the per-rank shapes split only the heads.
  for (const char* name : {"deepseek-v3", "tiny-mla"})
    for (std::int64_t q_lora : {-1, 0}) {
      auto model = load_model(name);
      if (q_lora == 0) model.mla->q_lora_rank = 0;
      const auto& a = *model.mla;
      double per_token = 0;
      for (const auto& p : mla_projections(model, 1)) per_token += 6.0 * p.in * p.out;
      const auto f = model_flops_per_token(model, model.seq);
      const double layers = static_cast<double>(model.layers + model.mtp_layers);
      EXPECT_NEAR(per_token * layers + 6.0 * layers * (a.q_lora_rank + a.kv_lora_rank),
                  f.attention_projections, 1e-9 * f.attention_projections)
          << name << " q_lora " << a.q_lora_rank;
      const auto tp1 = mla_projections(model, 1), tp4 = mla_projections(model, 4);
      ASSERT_EQ(tp1.size(), tp4.size());
      for (std::size_t i = 0; i < tp1.size(); ++i) {
        EXPECT_EQ(tp1[i].role, tp4[i].role);
        const bool split = tp1[i].role == "q_up" || tp1[i].role == "q" || tp1[i].role == "kv_up";
        EXPECT_EQ(tp4[i].out, split ? tp1[i].out / 4 : tp1[i].out) << tp1[i].role;
        EXPECT_EQ(tp4[i].in, tp1[i].role == "attn_out" ? tp1[i].in / 4 : tp1[i].in) << tp1[i].role;
        EXPECT_EQ(tp4[i].tp_replicated, tp1[i].role == "q_down" || tp1[i].role == "kv_down");
      }
    }
  EXPECT_THROW(mla_projections(load_model("tiny-mla"), 3), fb::Error);
  EXPECT_THROW(mla_projections(load_model("llama3-8b"), 1), fb::Error);
}

TEST(LayerGemmShapes, ImpossibleSplitsAreInputErrors) {
  const auto model = load_model("llama3-8b");
  LayerShapeOptions o;
  o.tp = 3;  // 32 heads
  try {
    layer_gemm_shapes(model, o);
    FAIL() << "expected an error";
  } catch (const fb::Error& e) {
    EXPECT_EQ(e.kind(), fb::ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("heads 32 is not divisible by --tp 3"), std::string::npos)
        << e.what();
  }
  o.tp = 0;
  EXPECT_THROW(layer_gemm_shapes(model, o), fb::Error);
}
