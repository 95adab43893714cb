#include "workloads/parallel_layout.hpp"

#include <gtest/gtest.h>

#include <cmath>
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

const PlanCollective& collective(const TrainPlan& plan, const std::string& name) {
  for (const auto& c : plan.collectives)
    if (c.name == name) return c;
  ADD_FAILURE() << "no collective " << name;
  return plan.collectives.front();
}

// Calls and bytes per step of every plan entry with this name (gradient buckets of several sizes share one).
std::pair<double, double> per_step(const TrainPlan& plan, const std::string& name) {
  double calls = 0, bytes = 0;
  for (const auto& c : plan.collectives)
    if (c.name == name) {
      calls += c.calls_per_step;
      bytes += c.bytes_per_step();
    }
  return {calls, bytes};
}

TEST(ParallelLayout, SequenceParallelCollectiveBytes) {
  // Llama 3 8B, TP 8, bf16, seq 8192 x micro-batch 2 x grad-accum 3: T = 16384 tokens x 4096 hidden x 2 B.
  StepShape s;
  s.micro_batch = 2;
  s.grad_accum = 3;
  s.dtype = DType::bf16;
  const auto m = load_model("llama3-8b");
  const double act = 16384.0 * 4096 * 2;
  const auto plain = make_plan(m, {8, 1, 1, 1}, s);
  s.sequence_parallel = true;
  const auto sp = make_plan(m, {8, 1, 1, 1}, s);
  EXPECT_EQ(sp.local.sp_tokens, 16384 / 8);
  EXPECT_EQ(plain.local.sp_tokens, 16384);
  const auto& ar = collective(plain, "tp_allreduce/layer_out");
  const auto& ag = collective(sp, "tp_allgather/layer_in");
  const auto& rs = collective(sp, "tp_reduce_scatter/layer_out");
  // Without SP: 4 all-reduces of the full activations per layer and micro-batch (+1 for the output layer).
  EXPECT_DOUBLE_EQ(ar.bytes_per_call, act);
  EXPECT_DOUBLE_EQ(ar.calls_per_step, (4 * 32 + 1) * 3);
  // With SP: every all-reduce becomes a reduce-scatter of the same input, and all-gathers of 1/T of it run
  // before QKV, the MLP, the output layer and the backward of the attention and MLP outputs.
  EXPECT_EQ(ag.op, "allgather");
  EXPECT_DOUBLE_EQ(ag.bytes_per_call, act / 8);
  EXPECT_DOUBLE_EQ(ag.calls_per_step, (4 * 32 + 1) * 3);
  EXPECT_EQ(rs.op, "reduce_scatter");
  EXPECT_DOUBLE_EQ(rs.bytes_per_call, act);
  EXPECT_DOUBLE_EQ(rs.calls_per_step, ar.calls_per_step);
  for (const auto& c : sp.collectives) EXPECT_NE(c.name, "tp_allreduce/layer_out");
  // Bus traffic: reduce-scatter + all-gather move (n−1)/n of the data each, as one ring all-reduce does.
  EXPECT_DOUBLE_EQ(rs.bytes_per_call * 7 / 8 + ag.bytes_per_call * 8 * 7 / 8, ar.bytes_per_call * 2 * 7 / 8);
}

TEST(ParallelLayout, DistributedOptimizerReduceScattersAndAllGathers) {
  // Mixtral 8x7B, DP 8 with EP 4 (expert-DP 2), bf16: ZeRO-1 turns each gradient all-reduce into a
  // reduce-scatter of the same bytes and an all-gather of the weights in which each rank sends its 1/n.
  StepShape s;
  s.dtype = DType::bf16;
  const auto m = load_model("mixtral-8x7b");
  const ParallelConfig c{1, 8, 4, 1};
  const auto plain = make_plan(m, c, s);
  s.distributed_optimizer = true;
  const auto zero = make_plan(m, c, s);
  const auto& ar = collective(plain, "dp_allreduce/grads");
  const auto& ear = collective(plain, "edp_allreduce/expert_grads");
  const auto& rs = collective(zero, "dp_reduce_scatter/grads");
  const auto& ag = collective(zero, "dp_allgather/params");
  const auto& ers = collective(zero, "edp_reduce_scatter/expert_grads");
  const auto& eag = collective(zero, "edp_allgather/expert_params");
  EXPECT_EQ(rs.op, "reduce_scatter");
  EXPECT_EQ(ag.op, "allgather");
  EXPECT_EQ(rs.group_size, 8);
  EXPECT_EQ(ers.group_size, 2);
  EXPECT_DOUBLE_EQ(rs.bytes_per_call, ar.bytes_per_call);
  EXPECT_DOUBLE_EQ(ag.bytes_per_call, ar.bytes_per_call / 8);
  EXPECT_DOUBLE_EQ(ers.bytes_per_call, ear.bytes_per_call);
  EXPECT_DOUBLE_EQ(eag.bytes_per_call, ear.bytes_per_call / 2);
  for (const auto& x : zero.collectives) EXPECT_EQ(x.name.find("allreduce/"), x.name.npos) << x.name;
  // 12 B of optimizer state per parameter, the dense ones over 8 ranks and the experts over 2.
  EXPECT_EQ(zero.memory.optimizer, 12 * (static_cast<std::uint64_t>(plain.local.dense_params) / 8 +
                                         static_cast<std::uint64_t>(plain.local.expert_params) / 2));
}

TEST(ParallelLayout, PipelineStagesSplitLayersAndExchangeActivations) {
  StepShape s;
  s.grad_accum = 8;
  s.dtype = DType::bf16;
  const auto m = load_model("llama3-8b");
  const auto plan = make_plan(m, {2, 2, 1, 4}, s);
  EXPECT_EQ(plan.local.layers, 8);
  EXPECT_EQ(stage_layers(m, {2, 2, 1, 4}, 3).first, 24);
  for (const auto& g : plan.gemms) {
    if (g.gemm.role == "logits") continue;
    EXPECT_EQ(g.layers, 8) << g.gemm.name;
  }
  const double act = 8192.0 * 4096 * 2;
  EXPECT_DOUBLE_EQ(collective(plan, "pp_p2p/activations").bytes_per_call, act);
  EXPECT_DOUBLE_EQ(collective(plan, "pp_p2p/activations").calls_per_step, 8);
  EXPECT_DOUBLE_EQ(collective(plan, "pp_p2p/grads").calls_per_step, 8);
  EXPECT_DOUBLE_EQ(collective(plan, "tp_allreduce/layer_out").calls_per_step, (4 * 8 + 1) * 8);
  s.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(collective(make_plan(m, {2, 2, 1, 4}, s), "pp_p2p/grads").bytes_per_call, act / 2);
  // Memory: a quarter of the layers' weights per stage (plus the output layer on the last), and stage 0 keeps
  // the activations of min(P, grad_accum) = 4 micro-batches in flight (1 with one micro-batch).
  StepShape one = s;
  one.sequence_parallel = false;
  one.grad_accum = 1;
  StepShape eight = one;
  eight.grad_accum = 8;
  const auto whole = estimate_memory(m, {2, 2, 1, 1}, one);
  EXPECT_LT(estimate_memory(m, {2, 2, 1, 4}, one).weights, whole.weights / 2);
  EXPECT_GT(estimate_memory(m, {2, 2, 1, 4}, eight).activations,
            2 * estimate_memory(m, {2, 2, 1, 4}, one).activations);
  EXPECT_EQ(estimate_memory(m, {2, 2, 1, 1}, eight).activations, whole.activations);  // no pipeline: one
  EXPECT_TRUE(has(layout_error(m, {1, 1, 1, 3}, 3), "--pp 3 does not divide llama3-8b's layers (32)"));
}

// The plan's lists are those of one rank of the last stage: its gradients too. Here the last stage (layer 3)
// is dense: no expert gradients to reduce, and the dense ones are its layer plus the output layer. The plan
// used to list stage 0's (the largest), expert all-reduce included.
TEST(ParallelLayout, PipelineGradientCollectivesAreTheLastStages) {
  const auto m = parse_model_json(
      R"({"name":"moe4","layers":4,"hidden":64,"heads":4,"kv_heads":4,"head_dim":16,"ffn":128,
          "activation":"gelu","vocab":256,"seq":64,"mtp_layers":0,
          "moe":{"experts":4,"top_k":1,"expert_ffn":64,"shared_ffn":0,"layer_freq":2,"first_dense_layers":0}})",
      "moe4.json");
  StepShape s;
  s.dtype = DType::fp32;
  const auto plan = make_plan(m, {1, 2, 1, 4}, s);
  // Layer 3: QKV 64·(4+2·4)·16, out 64·64, GELU MLP 2·64·128, two norms of 64; output layer 256·64 + norm 64.
  const double layer3 = 64.0 * 12 * 16 + 64 * 64 + 2 * 64 * 128 + 2 * 64, output = 256 * 64 + 64;
  EXPECT_EQ(per_step(plan, "dp_allreduce/grads"), std::make_pair(2.0, (layer3 + output) * 4));
  EXPECT_DOUBLE_EQ(collective(plan, "dp_allreduce/grads").bytes_per_call, output * 4);  // backward's first
  for (const auto& x : plan.collectives) EXPECT_EQ(x.name.rfind("edp_", 0), x.name.npos) << x.name;
  // Without a pipeline the one stage is the whole model, experts included: layers 1 and 3, a bucket each.
  const auto whole = make_plan(m, {1, 2, 1, 1}, s);
  EXPECT_EQ(per_step(whole, "edp_allreduce/expert_grads"),
            std::make_pair(2.0, static_cast<double>(whole.local.expert_params) * 4));
}

// One call per gradient bucket, as train/model_weights.cpp lays them out: --bucket-layers 3 over llama3-8b's
// 32 layers is 10 buckets of 3 and one of 2 (backward reaches layers 30-31 first), with the output layer's
// and the embedding's; ZeRO pads each bucket to a multiple of 8 ranks x 64 elements.
TEST(ParallelLayout, GradientBucketsFollowBucketLayers) {
  const auto m = load_model("llama3-8b");
  StepShape s;
  s.dtype = DType::bf16;
  s.bucket_layers = 3;
  // A layer: QKV 4096·(32+2·8)·128, out 4096·4096, SwiGLU 3·4096·14336, two norms; vocab 128256 x 4096.
  const std::int64_t layer = 4096LL * 48 * 128 + 4096LL * 4096 + 3LL * 4096 * 14336 + 2 * 4096;
  const std::int64_t embedding = 128256LL * 4096, output = embedding + 4096;
  const ParallelConfig c{1, 8, 1, 1};
  const auto b = gradient_buckets(m, c, s, 0);
  ASSERT_EQ(b.dense.size(), 13u);
  EXPECT_EQ(b.dense.front().elements, output);
  EXPECT_EQ(b.dense.front().holds, "output layer and final norm");
  EXPECT_EQ(b.dense[1].elements, 2 * layer);
  EXPECT_EQ(b.dense[1].holds, "2 layers");
  for (std::size_t i = 2; i < 12; ++i) EXPECT_EQ(b.dense[i].elements, 3 * layer) << i;
  EXPECT_EQ(b.dense.back().elements, embedding);
  EXPECT_TRUE(b.expert.empty());
  // The plan: four entries (output, 2 layers, 10 x 3 layers, embedding), 13 calls, every weight once.
  const auto plan = make_plan(m, c, s);
  EXPECT_EQ(per_step(plan, "dp_allreduce/grads"),
            std::make_pair(13.0, static_cast<double>(32 * layer + embedding + output) * 2));
  EXPECT_DOUBLE_EQ(collective(plan, "dp_allreduce/grads").calls_per_step, 1);
  // Sharded over 8 ranks: every bucket a multiple of 512 elements (the output layer's 525,340,672 is one,
  // 2 layers' 436,224,000 too; the embedding's 525,336,576 as well: no padding for llama3-8b).
  s.distributed_optimizer = true;
  for (const auto& z : gradient_buckets(m, c, s, 0).dense) EXPECT_EQ(z.elements % 512, 0) << z.holds;
  // A tiny model's buckets do pad, to the next multiple of 512.
  const auto tiny = parse_model_json(
      R"({"name":"t","layers":2,"hidden":8,"heads":2,"kv_heads":2,"head_dim":4,"ffn":16,"activation":"gelu",
          "vocab":10,"seq":8,"mtp_layers":0})",
      "t.json");
  // A layer: QKV 8·(2+4)·4 = 192, out 8·8 = 64, MLP 2·8·16 = 256, norms 16: 528, two 1,056 → 1,536; output
  // 10·8 + 8 = 88 → 512; embedding 80 → 512.
  const auto t = gradient_buckets(tiny, c, s, 0);
  ASSERT_EQ(t.dense.size(), 3u);  // output, both layers (bucket_layers 3), embedding
  EXPECT_EQ(t.dense[0].elements, 512);
  EXPECT_EQ(t.dense[1].elements, 1536);
  EXPECT_EQ(t.dense[1].holds, "2 layers");
  EXPECT_EQ(t.dense[2].elements, 512);
}

TEST(ParallelLayout, MlaPlanGemmsCoverTheModelCount) {
  // DeepSeek-V3 without its MTP layer (not run by the step) at TP 1: the plan's GEMMs (MLA projections from
  // mla_projections, attention core with q/k head dim 192 and v head dim 128, experts at balanced routing)
  // reproduce the model FLOPs up to the router GEMMs, the LoRA norms and the diagonal attention blocks.
  auto m = load_model("deepseek-v3");
  m.mtp_layers = 0;
  StepShape s;
  const auto plan = make_plan(m, {1, 1, 1, 1}, s);
  EXPECT_EQ(plan.local.head_dim, 192);
  EXPECT_EQ(plan.local.v_head_dim, 128);
  EXPECT_EQ(plan.local.mla_latent, 1536 + 512 + 64);
  double flops = 0;
  const std::int64_t B = plan.local.attn_block, nb = plan.local.seq / B;
  for (const auto& g : plan.gemms) {
    const auto& p = g.gemm.problem;
    double f = 2.0 * p.m * p.n * p.k * p.batch * g.calls_per_layer * g.layers;
    if (g.gemm.role.rfind("attn_s", 0) == 0 || g.gemm.role.rfind("attn_c", 0) == 0)
      f = f * (nb + 1) / (2.0 * nb);
    flops += f;
  }
  const double model = plan.flops.total() * plan.local.tokens;
  EXPECT_GT(flops, model);
  EXPECT_LT(flops, model * 1.02);
}

// Sequence parallelism keeps the residual stream sharded (Megatron-LM): a layer's saved input and mid-layer
// residual, and the stage output, are 1/t of the rows. llama3-8b at tp 8: s 8192, b 1, h 4096, bf16.
TEST(ParallelLayout, SequenceParallelKeepsAShardOfTheResidualStream) {
  const auto m = load_model("llama3-8b");
  const ParallelConfig tp8{8, 1, 1, 1};
  StepShape s;
  s.dtype = DType::bf16;
  const auto acts = [&](std::int64_t layers, bool sp, Recompute r) {
    auto mm = m;
    mm.layers = layers;
    StepShape ss = s;
    ss.sequence_parallel = sp;
    ss.recompute = r;
    return estimate_memory(mm, tp8, ss).activations;
  };
  const std::uint64_t sbh = 8192ull * 4096, T = 8192, R = 8192 / 8;
  // Full recomputation keeps each layer's input: 2·s·b·h bytes in 16-bit (Korthikanti et al. 2022, Table 2),
  // and with sequence parallelism 2·s·b·h/t.
  EXPECT_EQ(acts(4, false, Recompute::full) - acts(2, false, Recompute::full), 2 * 2 * sbh);
  EXPECT_EQ(acts(4, true, Recompute::full) - acts(2, true, Recompute::full), 2 * 2 * sbh / 8);
  // Without recomputation each layer saves x_in and x_mid (16-bit) and two 1/rms rows (fp32) of this rank's
  // rows; the stage output is one more residual-stream buffer.
  EXPECT_EQ(acts(2, false, Recompute::none) - acts(2, true, Recompute::none),
            2 * 2 * (T - R) * 4096 * 2 + (T - R) * 4096 * 2 + 2 * 2 * (T - R) * 4);
}

TEST(ParallelLayout, MemoryEstimateAndFitCheck) {
  StepShape s;
  s.dtype = DType::bf16;
  const auto m = load_model("llama3-70b");
  const auto est = estimate_memory(m, {1, 1, 1, 1}, s);
  // Llama 3 70B's published 70,553,706,496 parameters (embedding, norms and output layer included), at 2 B
  // weights + 2 B gradients + 12 B optimizer each.
  EXPECT_EQ((est.weights + est.gradients + est.optimizer) / 16, 70'553'706'496ull);
  EXPECT_EQ((est.weights + est.gradients + est.optimizer) % 16, 0u);
  try {
    check_fits(est, std::uint64_t{141} << 30, m, {1, 1, 1, 1}, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "llama3-70b does not fit")) << e.what();
    EXPECT_TRUE(has(e.what(), "--layers")) << e.what();
    // At --dp 1 the distributed optimizer is refused: the hint asks for DP ranks with it.
    EXPECT_TRUE(has(e.what(), "or --dp N with --distributed-optimizer")) << e.what();
  }
  const auto hint = [&](const ParallelConfig& c, const StepShape& shape) {  // a byte short of fitting
    try {
      const auto e = estimate_memory(m, c, shape);
      check_fits(e, e.total() - 1, m, c, shape);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("fits");
  };
  EXPECT_TRUE(has(hint({1, 8, 1, 1}, s), "--seq, or --distributed-optimizer")) << hint({1, 8, 1, 1}, s);
  EXPECT_NO_THROW(check_fits(est, est.total(), m, {1, 1, 1, 1}, s));
  StepShape zero = s;
  zero.distributed_optimizer = true;
  EXPECT_FALSE(has(hint({1, 8, 1, 1}, zero), "distributed-optimizer")) << hint({1, 8, 1, 1}, zero);
  EXPECT_LT(estimate_memory(m, {1, 8, 1, 1}, zero).optimizer, est.optimizer / 7);
  // An MoE model: TP does not split the experts, so the hint names --ep; at --tp 2 --dp 1 the experts' DP
  // is 2 (dp x tp / ep), so the distributed optimizer acts without any --dp.
  const auto moe = load_model("mixtral-8x7b");
  const ParallelConfig tp2{2, 1, 1, 1};
  try {
    const auto e = estimate_memory(moe, tp2, s);
    check_fits(e, e.total() - 1, moe, tp2, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "a larger --ep (now 1: TP does not split the experts)")) << e.what();
    EXPECT_TRUE(has(e.what(), "--seq, or --distributed-optimizer")) << e.what();
  }
  const ParallelConfig ep8{1, 8, 8, 1};  // every expert on its own rank: no larger --ep to suggest
  try {
    check_fits(estimate_memory(moe, ep8, s), 1, moe, ep8, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_FALSE(has(e.what(), "--ep")) << e.what();
  }
}

// A hint names only what can make the step fit (issue: llama3-8b --layers 1 on a 23 GiB host was told to try
// fewer layers; its output layer and the Adam state of 1.27 G parameters were the need).
TEST(ParallelLayout, FitHintsNameOnlyWhatCanHelp) {
  StepShape s;
  s.dtype = DType::fp32;
  s.seq = 256;
  auto m = load_model("llama3-8b");
  m.layers = 1;
  const auto hint = [&](const ModelConfig& model, const ParallelConfig& c, const StepShape& shape,
                        std::uint64_t available) {
    try {
      check_fits(estimate_memory(model, c, shape), available, model, c, shape);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("fits");
  };
  const auto est = estimate_memory(m, {1, 1, 1, 1}, s);
  const std::uint64_t state = est.weights + est.gradients + est.optimizer;
  // One layer: no fewer layers, no more stages. The state alone is too much: the message says so, and a
  // shorter sequence (activations only) is not offered; TP and sharding the optimizer state shrink the state.
  const auto one = hint(m, {1, 1, 1, 1}, s, state - 1);
  EXPECT_TRUE(has(one, "(the weights, gradients and optimizer state alone need ")) << one;
  EXPECT_TRUE(has(one, "; try a larger --tp (now 1), or --dp N with --distributed-optimizer")) << one;
  for (const char* absent : {"--layers", "--pp", "--seq", "--micro-batch"})
    EXPECT_FALSE(has(one, absent)) << one;
  // With layers to spare, fewer layers and more stages are offered.
  auto two = m;
  two.layers = 2;
  const auto more = hint(two, {1, 1, 1, 1}, s, 1);
  EXPECT_TRUE(has(more, "; try --layers N (fewer layers; now 2), a larger --tp (now 1) or --pp, or --dp N"))
      << more;
  // Only the activations are too much (a long sequence of a small model): a shorter --seq, and no note.
  const auto tiny = load_model("tiny-dense");
  StepShape longer = s;
  longer.seq = 1 << 20;
  const auto t = estimate_memory(tiny, {1, 1, 1, 1}, longer);
  const auto seq = hint(tiny, {1, 1, 1, 1}, longer, t.weights + t.gradients + t.optimizer + (64 << 20));
  EXPECT_TRUE(has(seq, fmt::format("try --layers N (fewer layers; now {}), a larger --tp (now 1) or --pp, a "
                                   "smaller --micro-batch (now 1) or --seq",
                                   tiny.layers)))
      << seq;
  EXPECT_FALSE(has(seq, "alone need")) << seq;
}

// Products of in-range sizes the integers could not hold: in fp32 the estimate wrapped 64 bits (15.8 EiB
// at micro-batch 2, 15.5 at 4, which needs 31); it grows with the micro-batch, and a step past 8 EiB per
// rank is refused.
TEST(ParallelLayout, MemoryEstimateOfAbsurdSizesDoesNotWrap) {
  const auto m = load_model("llama3.1-405b");
  StepShape s;
  s.dtype = DType::bf16;
  s.seq = 1 << 22;
  std::uint64_t previous = 0;
  for (const std::int64_t mb : {1, 2, 4, 8}) {
    s.micro_batch = mb;
    const auto est = estimate_memory(m, {1, 1, 1, 1}, s);
    EXPECT_GT(est.activations, previous + previous / 2) << mb;  // about doubles
    EXPECT_GE(est.total(), est.activations);
    previous = est.activations;
  }
  // At 16M tokens: 126 layers of 128 heads x (16M^2 / 2) probabilities in bf16, at least 2^62 bytes.
  s.seq = 1 << 24;
  s.micro_batch = 1;
  const auto est = estimate_memory(m, {1, 1, 1, 1}, s);
  EXPECT_GT(static_cast<double>(est.activations), 126.0 * 128 * std::pow(2.0, 47) * 2);
  EXPECT_GE(est.total(), est.activations);
  s.dtype = DType::fp32;
  s.micro_batch = 4;  // wrapped to 15.5 EiB
  try {
    (void)estimate_memory(m, {1, 1, 1, 1}, s);
    FAIL() << "a step of 31 EiB per rank was planned";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "--micro-batch 4 in fp32 needs about 31")) << e.what();
    EXPECT_TRUE(has(e.what(), "beyond any machine")) << e.what();
  }
}

// A vocabulary TP does not divide is padded to a multiple of TP; the plan's parameters and FLOPs count the
// padded rows, as the step holds them (and as Megatron-LM counts its padded_vocab_size).
TEST(ParallelLayout, PaddedVocabularyIsCounted) {
  const auto m = parse_model_json(
      R"({"name":"v","layers":2,"hidden":64,"heads":4,"ffn":128,"activation":"gelu","vocab":510,"seq":64})",
      "v.json");
  StepShape s;
  s.dtype = DType::fp32;
  auto padded = m;
  padded.vocab = 512;
  const auto tp2 = make_plan(m, {2, 1, 1, 1}, s), tp4 = make_plan(m, {4, 1, 1, 1}, s);
  EXPECT_EQ(tp2.params.total, parameter_counts(m).total);  // 510 = 2 x 255: no padding
  EXPECT_DOUBLE_EQ(tp2.flops.logits, model_flops_per_token(m, 64, s.attention).logits);
  EXPECT_EQ(tp4.params.total, parameter_counts(padded).total);  // 4 x 128 rows
  EXPECT_EQ(tp4.params.total - tp2.params.total, 2 * 2 * 64);   // two rows of the embedding and of the output
  EXPECT_DOUBLE_EQ(tp4.flops.logits, model_flops_per_token(padded, 64, s.attention).logits);
  EXPECT_DOUBLE_EQ(tp4.flops.logits, 6.0 * 64 * 512);  // 6·h·V per token
}

}  // namespace
}  // namespace fb::workloads
