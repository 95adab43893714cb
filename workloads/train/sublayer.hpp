#pragma once
// One half of a pre-norm transformer block with its residual connection, as a forward/backward pair:
// attention (x_in → x_mid; workloads/train/attention_layer.cpp, with GQA or MLA projections) or feed-forward
// (x_mid → the block output; dense MLP in mlp_layer.cpp, MoE in moe_layer.cpp). Each sublayer reads the
// RMSNorm of its input, which the sublayer before it computed in the same kernel as its residual add
// (NormTarget), and runs that norm's backward itself. The math runs on the GEMM engine and the train kernels
// (kernels/gemm_engine.hpp, kernels/train_kernels.hpp), which have host and cuda implementations; the layers
// themselves know no backend.
#include <cstdint>
#include <vector>

#include "core/backend.hpp"
#include "workloads/train/model_weights.hpp"

namespace fb::workloads::train {

// Saved activations of one layer for one micro-batch. Token-major (token t's row at t·width). The residual
// stream x_in, x_mid holds this rank's rows (all T, or T/tp with sequence parallelism); their norms xn_in,
// xn_mid hold all T rows once all-gathered, and rstd_in, rstd_mid the norms' 1/rms of this rank's rows.
// qkv is the fused projection output [Q | K | V] (MLA: [Q | K | V | kv_up's k_nope]); ctx the attention
// output. MLA: latent = [c_q | c_kv | k_rope] from the down projections, latent_n = [norm(c_q) | norm(c_kv) |
// rope(k_rope)] what the up projections read.
struct LayerActs {
  DeviceBuffer x_in, xn_in, rstd_in, qkv, probs, stats, ctx, x_mid, xn_mid, rstd_mid, up, act;
  DeviceBuffer latent, latent_n, rstd_q, rstd_kv;  // MLA
  // MoE
  DeviceBuffer router_logits, idx, weight, row_of_slot, counts, comb, expert_in, e_up, e_act;
  std::int64_t capacity = 0;                       // rows expert_in/e_up/e_act hold
  std::vector<std::int64_t> send_rows, recv_rows;  // per EP peer
  std::vector<std::int64_t> recv_matrix;           // [src][local expert] rows
  std::vector<std::int64_t> expert_rows;           // per local expert
  std::int64_t received = 0;
};

// Where a sublayer's output goes next: the RMSNorm (gain `gamma`, in the step dtype) of the next sublayer,
// into `normed` and `rstd` (this rank's rows). gamma null: no norm follows here (the end of a pipeline stage
// that is not the last).
struct NormTarget {
  const void* gamma = nullptr;
  void* normed = nullptr;
  float* rstd = nullptr;
};

class Sublayer {
 public:
  virtual ~Sublayer() = default;
  // Allocates this sublayer's saved activations in `a` (layer `w`).
  virtual void allocate(LayerActs& a, const LayerWeights& w) = 0;
  // Reads the sublayer's normed input from `a`, saves what backward needs there and writes input +
  // sublayer(input) (this rank's rows) to `out`, and its norm to `next`.
  virtual void forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) = 0;
  // From the gradient w.r.t. the output to the gradient w.r.t. the input, through the sublayer and its
  // pre-norm, residual included, accumulating weight gradients. Attention: g_b → g_a; feed-forward: g_a → g_b
  // (Workspace buffers).
  virtual void backward(LayerActs& a, const LayerWeights& w) = 0;
};

}  // namespace fb::workloads::train
