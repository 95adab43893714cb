#pragma once
// One half of a transformer block with its residual connection, as a forward/backward pair: attention
// (x_in → x_mid; workloads/train/attention_layer.cpp, with GQA or MLA projections) or feed-forward (x_mid →
// the block output; dense MLP in mlp_layer.cpp, MoE in moe_layer.cpp). The math runs on the GEMM engine and
// the train kernels (kernels/gemm_engine.hpp, kernels/train_kernels.hpp), which have host and cuda
// implementations; the layers themselves know no backend.
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

// Saved activations of one layer for one micro-batch. x_in and x_mid hold all T rows (with sequence
// parallelism: all-gathered from each TP rank's T/tp rows). MLA: latent is the down projections' output
// (T × (q_lora + kv_lora + rope), feature-major), qkv_t holds [Q | K | V | kv_up's k_nope] column blocks.
struct LayerActs {
  DeviceBuffer x_in, qkv_t, probs, ctx_t, x_mid, up, act;  // dense/shared MLP: up, act
  DeviceBuffer latent;                                     // MLA
  // MoE
  DeviceBuffer router_logits, idx, weight, row_of_slot, counts, comb, expert_in, e_up, e_act;
  std::int64_t capacity = 0;                       // rows expert_in/e_up/e_act hold
  std::vector<std::int64_t> send_rows, recv_rows;  // per EP peer
  std::vector<std::int64_t> recv_matrix;           // [src][local expert] rows
  std::vector<std::int64_t> expert_rows;           // per local expert
  std::int64_t received = 0;
};

class Sublayer {
 public:
  virtual ~Sublayer() = default;
  // Allocates this sublayer's saved activations in `a` (layer `w`).
  virtual void allocate(LayerActs& a, const LayerWeights& w) = 0;
  // Reads the sublayer's input from `a`, saves what backward needs there and writes input + sublayer(input)
  // (this rank's rows) to `out`.
  virtual void forward(LayerActs& a, const LayerWeights& w, void* out) = 0;
  // From the gradient w.r.t. the output to the gradient w.r.t. the input, residual included, accumulating
  // weight gradients. Attention: g_b → g_a; feed-forward: g_a → g_b (Workspace buffers).
  virtual void backward(LayerActs& a, const LayerWeights& w) = 0;
};

}  // namespace fb::workloads::train
