#pragma once
// The attention core of a layer: causal softmax(Q·Kᵀ·scale)·V over the token-major Q/K/V column blocks of
// the fused QKV buffer (qkv, T × W with W = LocalDims::qkv_width) into ctx (T × heads·v_head_dim), and its
// backward. Query head j reads key/value head j / (heads / kv_heads) (GQA; MLA: one head per group).
// Two implementations: the blocked GEMM path (blocked_attention.cpp: score strips through the GEMM engine
// and TrainKernels::causal_softmax, probabilities saved) and a fused engine (fused_attention_core.cpp: cuDNN
// SDPA or the host reference, kernels/attention_engine.hpp; only log-sum-exp statistics saved).
#include <memory>

#include "kernels/attention_engine.hpp"
#include "workloads/train/step_context.hpp"
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

class AttentionCore {
 public:
  virtual ~AttentionCore() = default;
  // What forward saves for backward (a.probs or a.stats).
  virtual void allocate(LayerActs& a) = 0;
  // a.qkv → a.ctx.
  virtual void forward(LayerActs& a) = 0;
  // d ctx → d qkv: every Q, K and V column of dqkv is overwritten (columns beyond V are left alone).
  virtual void backward(LayerActs& a, const void* dctx, void* dqkv) = 0;
};

// The attention shape of a rank's layer under `plan` (batch = micro-batch, local heads, Q/K/V column blocks
// of the qkv rows, the context rows packed).
kernels::AttentionShape attention_shape(const TrainPlan& plan);

std::unique_ptr<AttentionCore> make_blocked_attention(StepContext& c);
// `engine` outlives the core.
std::unique_ptr<AttentionCore> make_fused_attention(StepContext& c, kernels::FusedAttention& engine);

}  // namespace fb::workloads::train
