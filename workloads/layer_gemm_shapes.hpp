#pragma once
// The GEMMs of one transformer layer on one tensor-parallel rank, forward and backward: what `gemm --model`
// measures and what the train step runs. Pure (no I/O); shapes follow Megatron-LM's column/row-parallel
// split.
//
// With T = seq · micro_batch tokens and a linear layer Y[T×out] = X[T×in] · Wᵀ (W stored row-major out×in, as
// PyTorch and Megatron store it), the three GEMMs in column-major BLAS terms (kernels/gemm_engine.hpp) are
//   fwd    Y  = X · Wᵀ    m = out, n = T,   k = in   A = W (transposed), B = X          "TN"
//   dgrad  dX = dY · W    m = in,  n = T,   k = out  A = W,              B = dY         "NN"
//   wgrad  dW = dYᵀ · X   m = in,  n = out, k = T    A = X,              B = dY (transposed) "NT"
// Roles and their (in, out) on a rank with tensor-parallel degree tp:
//   qkv       hidden → (heads/tp + 2·kv_heads/tp)·head_dim   (kv heads replicated when kv_heads < tp)
//   attn_out  heads·head_dim/tp → hidden                     (MLA: heads·v_head_dim/tp)
//   MLA instead of qkv: q_down hidden → q_lora_rank, q_up q_lora_rank → heads·(nope+rope)/tp,
//                       kv_down hidden → kv_lora_rank + rope, kv_up kv_lora_rank → heads·(nope+v)/tp
//   mlp_up    hidden → 2·ffn/tp (SwiGLU: up and gate fused) or ffn/tp (GeLU); mlp_down ffn/tp → hidden
//             (dense layers only; MoE models with leading dense layers list them too)
//   router    hidden → experts (replicated), on this TP rank's T/tp tokens (each TP rank routes its slice)
//   expert_up / expert_down: like mlp_* with the whole expert_ffn (experts are not tensor-split: expert
//             TP = 1, as the train step runs them), batched over the experts on this rank (experts/ep), each
//             receiving (T/tp)·ep·top_k/experts tokens (balanced routing over the EP group, rounded up)
//   shared_up / shared_down: the shared experts as one dense MLP of shared_ffn on all T tokens
// Attention's score and context products (flash attention) are not GEMM-engine work and are not listed.
// The MLA projections come from mla_projections(), which the train step also builds its weights from: one
// source for the shapes that workloads/model_flops.cpp counts.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gemm_engine.hpp"
#include "workloads/model_config.hpp"

namespace fb::workloads {

struct LayerShapeOptions {
  std::int64_t tp = 1;           // tensor-parallel degree
  std::int64_t ep = 1;           // expert-parallel degree (MoE: experts per rank = experts / ep)
  std::int64_t seq = 0;          // 0 = the model's training sequence length
  std::int64_t micro_batch = 1;  // sequences per micro-batch
  bool backward = true;          // include dgrad and wgrad
};

struct LayerGemm {
  std::string name;              // "llama3-70b/tp8/mlp_down/fwd"
  std::string role;              // "mlp_down"
  std::string pass;              // "fwd", "dgrad" or "wgrad"
  kernels::GemmProblem problem;  // dtype left at its default: the caller sets it
};

// A pass of a layer's GEMM, named "PREFIX/ROLE/PASS", C[m×n] = op(A)·op(B) with k the reduced dimension.
LayerGemm make_layer_gemm(const std::string& prefix, const std::string& role, const char* pass,
                          std::int64_t m, std::int64_t n, std::int64_t k, bool transa, bool transb,
                          std::int64_t batch = 1);

// One linear layer of a rank: `in` → `out` features.
struct Projection {
  std::string role;
  std::int64_t in = 0, out = 0;
  bool tp_replicated = false;  // the same weights on every TP rank (not split)
};

// Multi-head latent attention (model.mla must be set) on one rank with tensor-parallel degree tp, in
// execution order: q_down (hidden → q_lora_rank) and q_up (q_lora_rank → heads/tp·(nope+rope)), or q
// (hidden → heads/tp·(nope+rope)) when q_lora_rank is 0; kv_down (hidden → kv_lora_rank + rope, the rope
// part is the key's shared positional half); kv_up (kv_lora_rank → heads/tp·(nope + v)); attn_out
// (heads/tp·v → hidden). The down projections are replicated over TP (Megatron-LM: "duplicated"), the up
// projections column-parallel, attn_out row-parallel. Throws an input Error when tp does not divide heads.
std::vector<Projection> mla_projections(const ModelConfig& model, std::int64_t tp);

// The training sequence length for `--seq seq` (0 = the model's): the one check of --seq. Throws a usage
// Error for a negative --seq, an input Error when neither gives a length.
std::int64_t sequence_length(const ModelConfig& model, std::int64_t seq);

// Throws an input Error naming the model and option when the split is impossible (heads not divisible by tp,
// experts not divisible by ep, …) and a usage Error for tp/ep/seq/micro_batch below 1.
std::vector<LayerGemm> layer_gemm_shapes(const ModelConfig& model, const LayerShapeOptions& options);

}  // namespace fb::workloads
