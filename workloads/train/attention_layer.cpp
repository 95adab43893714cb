#include "workloads/train/attention_layer.hpp"

#include "workloads/train/residual_norm.hpp"

namespace fb::workloads::train {
namespace {

class GqaProjection final : public QkvProjection {
 public:
  GqaProjection(StepContext& c, Region& dense) : c_(c), dense_(dense) {}
  void forward(LayerActs& a, const LayerWeights& w) override {
    c_.mark(kGemm);
    linear_forward(c_, dense_, w.qkv, a.xn_in.data(), c_.l.tokens, a.qkv.data());
    rope(a.qkv.data(), false);
  }
  void backward(LayerActs& a, const LayerWeights& w) override {
    auto& ws = c_.ws;
    rope(ws.g_a.data(), true);  // d(pre-rotation Q, K) = Rᵀ · d(rotated)
    c_.mark(kGemm);
    linear_dgrad(c_, dense_, w.qkv, ws.g_a.data(), c_.l.tokens, ws.g_c.data());
    linear_wgrad(c_, dense_, w.qkv, a.xn_in.data(), ws.g_a.data(), c_.l.tokens);
    c_.tp_reduce(ws.g_c.data(), "qkv_dgrad");
  }

 private:
  // Every query and key head: the heads + kv_heads head_dim-wide blocks at the start of each qkv row.
  void rope(void* qkv, bool inverse) {
    const auto& l = c_.l;
    c_.mark(kElementwise);
    c_.k->rope(qkv, c_.dt, l.tokens, l.qkv_width, 0, l.heads + l.kv_heads, l.head_dim, l.head_dim, l.seq,
               c_.m.rope_theta, inverse);
  }
  StepContext& c_;
  Region& dense_;
};

}  // namespace

std::unique_ptr<QkvProjection> make_gqa_projection(StepContext& c, Region& dense) {
  return std::make_unique<GqaProjection>(c, dense);
}

void AttentionLayer::allocate(LayerActs& a, const LayerWeights&) {
  const auto& l = c_.l;
  const std::int64_t T = l.tokens, h = c_.m.hidden;
  a.x_in = c_.act(c_.rows * h);  // the residual stream: this rank's rows only
  a.xn_in = c_.act(T * h);
  a.rstd_in = c_.alloc(c_.rows, 4);
  a.qkv = c_.act(T * l.qkv_width);
  a.ctx = c_.act(T * l.heads * l.v_head_dim);
  a.x_mid = c_.act(c_.rows * h);
  core_->allocate(a);
  projection_->allocate(a);
}

void AttentionLayer::forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) {
  c_.tp_gather(a.xn_in.data(), "attn_in");
  projection_->forward(a, w);
  core_->forward(a);
  c_.mark(kGemm);
  void* tmp = c_.ws.tmp.data();
  linear_forward(c_, dense_, w.attn_out, a.ctx.data(), c_.l.tokens, tmp);
  c_.tp_reduce(tmp, "attn_out");
  residual_add(c_, out, a.x_in.data(), tmp, next);
}

// g_b = d x_mid → g_a = d x_in (this rank's rows), through g_c (d ctx, then d xn_in of the projections).
void AttentionLayer::backward(LayerActs& a, const LayerWeights& w) {
  auto& ws = c_.ws;
  c_.tp_gather(ws.g_b.data(), "attn_out_grad");
  c_.mark(kGemm);
  linear_dgrad(c_, dense_, w.attn_out, ws.g_b.data(), c_.l.tokens, ws.g_c.data());
  linear_wgrad(c_, dense_, w.attn_out, a.ctx.data(), ws.g_b.data(), c_.l.tokens);
  // Selective recomputation (Korthikanti et al. 2022): the core's forward again, from the saved QKV, for
  // what it did not keep (the blocked path's probabilities; ctx is rewritten with the values it holds).
  if (c_.plan.shape.recompute == Recompute::selective) core_->forward(a);
  // Core: d qkv into g_a (free now: x_mid's gradient is in g_b).
  core_->backward(a, ws.g_c.data(), ws.g_a.data());
  projection_->backward(a, w);
  // d x_in = d x_mid (residual) + norm1's backward of d xn_in.
  norm_backward(c_, dense_, w.attn_norm, ws.g_c.data(), a.x_in.data(), a.rstd_in.as<float>(), ws.g_b.data(),
                ws.g_a.data());
}

}  // namespace fb::workloads::train
