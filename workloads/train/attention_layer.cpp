#include "workloads/train/attention_layer.hpp"

namespace fb::workloads::train {
namespace {

class GqaProjection final : public QkvProjection {
 public:
  GqaProjection(StepContext& c, Region& dense) : c_(c), dense_(dense) {}
  void forward(LayerActs& a, const LayerWeights& w) override {
    const std::int64_t T = c_.l.tokens, h = c_.m.hidden, W = c_.l.qkv_width;
    c_.mark(kGemm);
    c_.gemm(T, W, h, true, false, a.x_in.data(), h, weight(c_, dense_, w.qkv), h, a.qkv_t.data(), T, 0.0);
  }
  void backward(LayerActs& a, const LayerWeights& w) override {
    const std::int64_t T = c_.l.tokens, h = c_.m.hidden, W = c_.l.qkv_width;
    auto& ws = c_.ws;
    c_.mark(kGemm);
    // dX = W·dqkv (h×T) into g_c, dW += X·dqkv_t.
    c_.gemm(h, T, W, false, true, weight(c_, dense_, w.qkv), h, ws.g_a.data(), T, ws.g_c.data(), h, 0.0);
    c_.gemm(h, W, T, false, false, a.x_in.data(), h, ws.g_a.data(), T, weight_grad(c_, dense_, w.qkv), h,
            1.0);
    c_.tp_reduce(ws.g_c.data(), "qkv_dgrad");
  }

 private:
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
  a.x_in = c_.act(T * h);
  a.qkv_t = c_.act(T * l.qkv_width);
  a.probs = c_.act(core_.probs_per_seq() * c_.plan.shape.micro_batch);
  a.ctx_t = c_.act(T * l.heads * l.v_head_dim);
  a.x_mid = c_.act(T * h);
  projection_->allocate(a);
}

void AttentionLayer::forward(LayerActs& a, const LayerWeights& w, void* out) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, hd = c_.l.heads * c_.l.v_head_dim;
  c_.tp_gather(a.x_in.data(), "attn_in");
  projection_->forward(a, w);
  core_.forward(a);
  c_.mark(kGemm);
  void* tmp = c_.ws.tmp.data();
  c_.gemm(h, T, hd, true, true, weight(c_, dense_, w.attn_out), hd, a.ctx_t.data(), T, tmp, h, 0.0);
  c_.tp_reduce(tmp, "attn_out");
  c_.residual(out, a.x_in.data(), tmp);
}

// g_b = d x_mid → g_a = d x_in (this rank's rows), through g_c (d ctx_t, then d x_in of the projections).
void AttentionLayer::backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, W = c_.l.qkv_width, hd = c_.l.heads * c_.l.v_head_dim;
  auto& ws = c_.ws;
  c_.tp_gather(ws.g_b.data(), "attn_out_grad");
  c_.mark(kGemm);
  c_.gemm(T, hd, h, true, true, ws.g_b.data(), h, weight(c_, dense_, w.attn_out), hd, ws.g_c.data(), T, 0.0);
  c_.gemm(hd, h, T, true, true, a.ctx_t.data(), T, ws.g_b.data(), h, weight_grad(c_, dense_, w.attn_out), hd,
          1.0);
  // Core: d qkv_t (T×W) into g_a (free now: x_mid's gradient is in g_b).
  c_.mark(kAttention);
  c_.k->scale(ws.g_a.data(), c_.dt, T * W, 0.0f);
  core_.backward(a, ws.g_c.data(), ws.g_a.data());
  projection_->backward(a, w);
  // d x_in = d x_mid (residual) + d attention input.
  c_.residual(ws.g_a.data(), ws.g_b.data(), ws.g_c.data());
}

}  // namespace fb::workloads::train
