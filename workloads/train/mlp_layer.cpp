#include "workloads/train/mlp_layer.hpp"

#include "workloads/train/residual_norm.hpp"

namespace fb::workloads::train {

void ffn_forward(StepContext& c, const Region& r, std::int64_t up_t, std::int64_t down_t, std::int64_t f,
                 LayerActs& a) {
  const std::int64_t T = c.l.tokens;
  c.mark(kGemm);
  linear_forward(c, r, up_t, a.xn_mid.data(), T, a.up.data());
  c.mark(kElementwise);
  c.k->activation_forward(c.swiglu(), a.up.data(), c.dt, f, T, a.act.data());
  c.mark(kGemm);
  linear_forward(c, r, down_t, a.act.data(), T, c.ws.tmp.data());
}

void ffn_backward(StepContext& c, Region& r, std::int64_t up_t, std::int64_t down_t, std::int64_t f,
                  LayerActs& a, void* dx) {
  const std::int64_t T = c.l.tokens;
  auto& ws = c.ws;
  c.mark(kGemm);
  linear_dgrad(c, r, down_t, ws.g_a.data(), T, ws.g_c.data());  // d act
  linear_wgrad(c, r, down_t, a.act.data(), ws.g_a.data(), T);
  c.mark(kElementwise);
  c.k->activation_backward(c.swiglu(), a.up.data(), ws.g_c.data(), c.dt, f, T, a.up.data());  // d up in place
  c.mark(kGemm);
  linear_dgrad(c, r, up_t, a.up.data(), T, dx);
  linear_wgrad(c, r, up_t, a.xn_mid.data(), a.up.data(), T);
}

void allocate_feed_forward_norm(StepContext& c, LayerActs& a) {
  a.xn_mid = c.act(c.l.tokens * c.m.hidden);
  a.rstd_mid = c.alloc(c.rows, 4);
}

void MlpLayer::allocate(LayerActs& a, const LayerWeights&) {
  const std::int64_t T = c_.l.tokens, up = c_.swiglu() ? 2 : 1;
  allocate_feed_forward_norm(c_, a);
  a.up = c_.act(T * up * c_.l.ffn);
  a.act = c_.act(T * c_.l.ffn);
}

void MlpLayer::forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) {
  c_.tp_gather(a.xn_mid.data(), "mlp_in");
  ffn_forward(c_, dense_, w.mlp_up, w.mlp_down, c_.l.ffn, a);
  c_.tp_reduce(c_.ws.tmp.data(), "mlp_out");
  residual_add(c_, out, a.x_mid.data(), c_.ws.tmp.data(), next);
}

// g_a = d out → g_b = d x_mid (this rank's rows, residual added), through g_c (d xn_mid).
void MlpLayer::backward(LayerActs& a, const LayerWeights& w) {
  auto& ws = c_.ws;
  c_.tp_gather(ws.g_a.data(), "layer_out_grad");
  ffn_backward(c_, dense_, w.mlp_up, w.mlp_down, c_.l.ffn, a, ws.g_c.data());
  c_.tp_reduce(ws.g_c.data(), "mlp_dgrad");
  norm_backward(c_, dense_, w.mlp_norm, ws.g_c.data(), a.x_mid.data(), a.rstd_mid.as<float>(), ws.g_a.data(),
                ws.g_b.data());
}

}  // namespace fb::workloads::train
