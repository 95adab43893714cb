#pragma once
// How a training step is split over ranks (tensor, data, expert and pipeline parallelism) and what each rank
// then holds and runs: the plan `train --dry-run` prints. Pure (no MPI, no allocation); tested in
// tests/unit/parallel_layout_test.cpp.
//
// Rank order (TP innermost, as Megatron-LM): rank = (p·D + d)·T + t. Tensor-parallel groups share (p, d);
// data-parallel groups share (p, t). Expert parallelism (MoE layers) runs over the D·T ranks of a stage:
// q = d·T + t, EP group = q / E, EP rank = q % E; expert weights are not tensor-split (expert TP = 1) and
// each TP rank routes its own 1/T slice of the tokens (as Megatron's sequence-parallel MoE). Expert gradients
// are reduced over the D·T/E ranks holding the same experts ("expert data parallel").
//
// Pipeline parallelism: stage p holds layers [p·L/P, (p+1)·L/P) (P must divide L); the last stage also holds
// the output layer. Sizes that differ between stages (parameters, memory) are given for the largest stage;
// the plan's GEMM and collective lists are those of one rank of the last stage (it has the output layer).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.hpp"
#include "workloads/layer_gemm_shapes.hpp"
#include "workloads/model_config.hpp"
#include "workloads/model_flops.hpp"

namespace fb::workloads {

struct ParallelConfig {
  std::int64_t tp = 1, dp = 1, ep = 1, pp = 1;
  std::int64_t world() const { return tp * dp * pp; }
  std::int64_t expert_dp() const { return dp * tp / ep; }  // ranks holding the same experts (MoE)
};

struct StepShape {
  std::int64_t seq = 0;  // 0 = the model's training sequence length
  std::int64_t micro_batch = 1;
  std::int64_t grad_accum = 1;
  DType dtype = DType::bf16;
  bool sequence_parallel = false;
  bool distributed_optimizer = false;  // ZeRO-1: optimizer state sharded over DP, grads reduce-scattered
  AttentionFlops attention = AttentionFlops::causal;
  Recompute recompute = Recompute::none;
  // The attention core runs on a fused engine (cuDNN): it saves log-sum-exp statistics, not probability
  // blocks, and runs no strip GEMMs. Set once the engine is chosen (run time), or by --dry-run for an
  // explicit fused engine; auto's --dry-run plan is the blocked GEMM path's.
  bool fused_attention = false;
  std::int64_t bucket_layers = 1;  // layers per data-parallel gradient bucket (--bucket-layers)
};

// Throws a usage Error naming the option and the constraint that fails ("--tp 3 does not divide heads 32").
void validate_layout(const ModelConfig& model, const ParallelConfig& parallel, std::int64_t world_size);

struct RankCoords {
  std::int64_t t = 0, d = 0, p = 0;
  std::int64_t ep_group = 0, ep_rank = 0;  // MoE: which EP group, rank inside it
  std::int64_t edp_rank = 0;               // MoE: rank among the replicas of the same experts
};
RankCoords rank_coords(std::int64_t rank, const ParallelConfig& parallel);

// What one rank holds and runs (sizes after the split).
struct LocalDims {
  std::int64_t seq = 0, tokens = 0;  // tokens = seq · micro_batch (one micro-batch on this rank)
  std::int64_t moe_tokens = 0;       // tokens this rank routes in MoE layers (tokens / tp)
  std::int64_t sp_tokens = 0;        // rows of the residual stream this rank holds: tokens / tp with
                                     // --sequence-parallel, else tokens
  std::int64_t layers = 0;           // layers per pipeline stage (layers / pp)
  std::int64_t heads = 0, kv_heads = 0;
  std::int64_t kv_copies = 1;   // TP ranks holding each kv head: tp / kv_heads when kv_heads < tp, else 1
  std::int64_t head_dim = 0;    // query/key head dim (MLA: qk_nope + qk_rope)
  std::int64_t v_head_dim = 0;  // value head dim (MLA: v_head_dim; else head_dim)
  std::int64_t qkv_width = 0;   // (heads + 2·kv_heads)·head_dim; MLA: heads·(2·(nope+rope) + v + nope) =
                                // Q, K (k_nope with the shared rope half), V and the kv_up k_nope output
  std::int64_t mla_latent = 0;  // MLA: q_lora + kv_lora + rope, the down projections' output per token
  std::int64_t ffn = 0;         // dense MLP intermediate per rank
  std::int64_t shared_ffn = 0;  // shared experts' intermediate per rank
  std::int64_t expert_ffn = 0;  // routed expert intermediate (not tensor-split)
  std::int64_t local_experts = 0;
  std::int64_t vocab = 0;          // logits columns per rank (ceil(V / tp))
  std::int64_t attn_block = 0;     // causal attention query/key block size (divides seq)
  std::int64_t dense_params = 0;   // weights this rank holds that DP replicas share (largest stage)
  std::int64_t expert_params = 0;  // routed-expert weights (replicated over expert-DP) (largest stage)
};
LocalDims local_dims(const ModelConfig& model, const ParallelConfig& parallel, const StepShape& shape);

// The model layers (0-based, global) pipeline stage `stage` holds: [first, first + count).
struct StageLayers {
  std::int64_t first = 0, count = 0;
  std::int64_t moe_layers(const ModelConfig& model) const;
};
StageLayers stage_layers(const ModelConfig& model, const ParallelConfig& parallel, std::int64_t stage);

// The gradient buckets one rank of pipeline stage `stage` reduces over data parallelism, in the order
// backward completes them: the output layer's and final norm's (last stage), then shape.bucket_layers layers
// at a time from the stage's last layer, then the input embedding's (first stage). Element counts, each
// padded as the distributed optimizer pads it (train/optimizer_shards.hpp); empty buckets (the expert bucket
// of dense layers) left out. The layout train/model_weights.cpp builds; pure.
struct GradientBucket {
  std::int64_t elements = 0;
  std::string holds;  // "output layer and final norm", "3 layers", "input embedding"
};
struct GradientBuckets {
  std::vector<GradientBucket> dense, expert;  // dense: over DP; expert: routed experts over expert-DP
};
GradientBuckets gradient_buckets(const ModelConfig& model, const ParallelConfig& parallel,
                                 const StepShape& shape, std::int64_t stage);

struct MemoryEstimate {
  std::uint64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, workspace = 0;
  std::uint64_t total() const { return weights + gradients + optimizer + activations + workspace; }
};
// The largest pipeline stage's need; a stage keeps the activations of min(P − stage, grad_accum)
// micro-batches (the 1F1B in-flight bound, workloads/pipeline_schedule.hpp).
MemoryEstimate estimate_memory(const ModelConfig& model, const ParallelConfig& parallel,
                               const StepShape& shape);

// Throws a usage Error when `estimate` exceeds `available_bytes`, with the sizes and what to change.
void check_fits(const MemoryEstimate& estimate, std::uint64_t available_bytes, const ModelConfig& model,
                const ParallelConfig& parallel, const StepShape& shape);

struct PlanGemm {
  LayerGemm gemm;                    // shape of one call (for attention core: the largest block strip)
  std::int64_t calls_per_layer = 1;  // per micro-batch and layer
  std::int64_t layers = 0;           // layers it runs in (on this rank)
  std::string note;
};

struct PlanCollective {
  PlanCollective() = default;
  PlanCollective(std::string name_, std::string group_, std::string op_, std::int64_t group_size_,
                 double bytes_per_call_, double calls_per_step_, std::string note_ = {})
      : name(std::move(name_)),
        group(std::move(group_)),
        op(std::move(op_)),
        group_size(group_size_),
        bytes_per_call(bytes_per_call_),
        calls_per_step(calls_per_step_),
        note(std::move(note_)) {}
  std::string name;   // "tp_allreduce/attn_out"
  std::string group;  // tp, ep, dp, edp, pp (neighbouring stages), world
  std::string op;     // allreduce, reduce_scatter, allgather, alltoallv, send_recv (pipeline)
  std::int64_t group_size = 1;
  double bytes_per_call = 0;  // per rank, input buffer size (alltoallv: balanced routing)
  double calls_per_step = 0;
  std::string note;  // what each call carries, where calls of one name differ ("3 layers")
  double bytes_per_step() const { return bytes_per_call * calls_per_step; }
};

struct TrainPlan {
  ModelConfig model;
  ParallelConfig parallel;
  StepShape shape;
  LocalDims local;
  ParameterCounts params;
  FlopsPerToken flops;  // model FLOPs per token
  double hardware_flops_per_token = 0;
  double tokens_per_step = 0;  // global: seq · micro_batch · grad_accum · dp
  double flops_per_step = 0;   // model FLOPs
  MemoryEstimate memory;
  std::vector<PlanGemm> gemms;
  std::vector<PlanCollective> collectives;
};

TrainPlan make_plan(const ModelConfig& model, const ParallelConfig& parallel, const StepShape& shape);

}  // namespace fb::workloads
