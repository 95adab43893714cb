#include "workloads/train/moe_layer.hpp"

#include "workloads/train/expert_gemms.hpp"
#include "workloads/train/mlp_layer.hpp"
#include "workloads/train/residual_norm.hpp"

namespace fb::workloads::train {

void MoeLayer::allocate(LayerActs& a, const LayerWeights&) {
  allocate_feed_forward_norm(c_, a);
  dispatch_.allocate(a);
  if (c_.l.shared_ffn > 0) {
    const std::int64_t T = c_.l.tokens, up = c_.swiglu() ? 2 : 1;
    a.up = c_.act(T * up * c_.l.shared_ffn);
    a.act = c_.act(T * c_.l.shared_ffn);
  }
}

// Shared experts write the layer's MLP output; with TP the routed experts run on this rank's 1/T token slice
// and add into it, and one TP all-reduce (sequence parallel: a reduce-scatter, whose slices are exactly the
// routed slices) sums partials and slices.
void MoeLayer::forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, Tm = c_.l.moe_tokens;
  void* tmp = c_.ws.tmp.data();
  c_.tp_gather(a.xn_mid.data(), "mlp_in");
  if (c_.l.shared_ffn > 0) {
    ffn_forward(c_, w_.dense, w.shared_up, w.shared_down, c_.l.shared_ffn, a);
  } else {
    c_.mark(kElementwise);
    c_.k->scale(tmp, c_.dt, T * h, 0.0f);
  }
  const void* x = c_.at(a.xn_mid, c_.coords.t * Tm * h);
  c_.mark(kGemm);
  linear_forward(c_, w_.dense, w.router, x, Tm, a.router_logits.data());
  dispatch_.dispatch(a, x);
  experts_forward(a, w);
  dispatch_.combine(a, c_.at(tmp, c_.coords.t * Tm * h));
  c_.tp_reduce(tmp, "moe_out");
  residual_add(c_, out, a.x_mid.data(), tmp, next);
}

// a.expert_in (expert-major) → up → activation → down → scratch_b, one grouped GEMM per projection.
void MoeLayer::experts_forward(LayerActs& a, const LayerWeights& w) {
  c_.mark(kGemm);
  expert_matmul(c_, w_.experts, w.expert_up, false, a.expert_rows, a.expert_in.data(), a.e_up.data());
  c_.mark(kElementwise);
  c_.k->activation_forward(c_.swiglu(), a.e_up.data(), c_.dt, c_.l.expert_ffn, a.received, a.e_act.data());
  c_.mark(kGemm);
  expert_matmul(c_, w_.experts, w.expert_up + 1, false, a.expert_rows, a.e_act.data(),
                dispatch_.scratch_b().data());
}

// g_a = d out → g_b = d x_mid (this rank's rows, residual added), through g_c (d xn_mid).
void MoeLayer::backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, Tm = c_.l.moe_tokens;
  auto& ws = c_.ws;
  c_.tp_gather(ws.g_a.data(), "layer_out_grad");
  if (c_.l.shared_ffn > 0) {  // shared experts: d xn_mid partial into g_c
    ffn_backward(c_, w_.dense, w.shared_up, w.shared_down, c_.l.shared_ffn, a, ws.g_c.data());
  } else {
    c_.mark(kElementwise);
    c_.k->scale(ws.g_c.data(), c_.dt, T * h, 0.0f);
  }
  // Routed experts on this rank's token slice: mirror of the forward.
  dispatch_.combine_backward(a, c_.at(ws.g_a, c_.coords.t * Tm * h));
  experts_backward(a, w);
  void* dx = c_.at(ws.g_c, c_.coords.t * Tm * h);
  dispatch_.dispatch_backward(a, dx);
  c_.mark(kGemm);
  linear_dgrad(c_, w_.dense, w.router, dispatch_.router_grad().data(), Tm, dx, 1.0);
  linear_wgrad(c_, w_.dense, w.router, c_.at(a.xn_mid, c_.coords.t * Tm * h), dispatch_.router_grad().data(),
               Tm);
  c_.tp_reduce(ws.g_c.data(), "moe_dgrad");
  norm_backward(c_, w_.dense, w.mlp_norm, ws.g_c.data(), a.x_mid.data(), a.rstd_mid.as<float>(),
                ws.g_a.data(), ws.g_b.data());
}

// d expert output (expert-major, scratch_b) → d expert input (expert-major, scratch_a), weight gradients.
void MoeLayer::experts_backward(LayerActs& a, const LayerWeights& w) {
  auto& sa = dispatch_.scratch_a();
  auto& sb = dispatch_.scratch_b();
  c_.mark(kGemm);
  expert_matmul(c_, w_.experts, w.expert_up + 1, true, a.expert_rows, sb.data(), sa.data());
  expert_wgrad(c_, w_.experts, w.expert_up + 1, a.expert_rows, a.e_act.data(), sb.data());
  c_.mark(kElementwise);
  c_.k->activation_backward(c_.swiglu(), a.e_up.data(), sa.data(), c_.dt, c_.l.expert_ffn, a.received,
                            a.e_up.data());
  c_.mark(kGemm);
  expert_matmul(c_, w_.experts, w.expert_up, true, a.expert_rows, a.e_up.data(), sa.data());
  expert_wgrad(c_, w_.experts, w.expert_up, a.expert_rows, a.expert_in.data(), a.e_up.data());
}

}  // namespace fb::workloads::train
