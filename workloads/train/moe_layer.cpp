#include "workloads/train/moe_layer.hpp"

#include "workloads/train/mlp_layer.hpp"

namespace fb::workloads::train {

void MoeLayer::allocate(LayerActs& a, const LayerWeights&) {
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
void MoeLayer::forward(LayerActs& a, const LayerWeights& w, void* out) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, Tm = c_.l.moe_tokens;
  void* tmp = c_.ws.tmp.data();
  c_.tp_gather(a.x_mid.data(), "mlp_in");
  if (c_.l.shared_ffn > 0) {
    ffn_forward(c_, w_.dense, w.shared_up, w.shared_down, c_.l.shared_ffn, a);
  } else {
    c_.mark(kElementwise);
    c_.k->scale(tmp, c_.dt, T * h, 0.0f);
  }
  const void* x = c_.at(a.x_mid, c_.coords.t * Tm * h);
  c_.mark(kGemm);
  linear_forward(c_, w_.dense, w.router, x, Tm, a.router_logits.data());
  dispatch_.dispatch(a, x);
  experts_forward(a, w);
  dispatch_.combine(a, c_.at(tmp, c_.coords.t * Tm * h));
  c_.tp_reduce(tmp, "moe_out");
  c_.residual(out, a.x_mid.data(), tmp);
}

// a.expert_in (expert-major) → up → activation → down → scratch_b, one GEMM per local expert.
void MoeLayer::experts_forward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t h = c_.m.hidden, up = c_.swiglu() ? 2 : 1, f = c_.l.expert_ffn;
  c_.mark(kGemm);
  std::int64_t row = 0;
  for (std::int64_t e = 0; e < c_.l.local_experts; ++e) {
    const std::int64_t n = a.expert_rows[e];
    linear_forward(c_, w_.experts, w.expert_up + 2 * e, c_.at(a.expert_in, row * h), n,
                   c_.at(a.e_up, row * up * f));
    row += n;
  }
  c_.mark(kElementwise);
  c_.k->activation_forward(c_.swiglu(), a.e_up.data(), c_.dt, f, a.received, a.e_act.data());
  c_.mark(kGemm);
  row = 0;
  for (std::int64_t e = 0; e < c_.l.local_experts; ++e) {
    const std::int64_t n = a.expert_rows[e];
    linear_forward(c_, w_.experts, w.expert_up + 2 * e + 1, c_.at(a.e_act, row * f), n,
                   c_.at(dispatch_.scratch_b(), row * h));
    row += n;
  }
}

// g_a = d out → g_b = d x_mid (this rank's rows, residual added).
void MoeLayer::backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, Tm = c_.l.moe_tokens;
  auto& ws = c_.ws;
  c_.tp_gather(ws.g_a.data(), "layer_out_grad");
  if (c_.l.shared_ffn > 0) {  // shared experts: d x_mid partial into g_b
    ffn_backward(c_, w_.dense, w.shared_up, w.shared_down, c_.l.shared_ffn, a);
  } else {
    c_.mark(kElementwise);
    c_.k->scale(ws.g_b.data(), c_.dt, T * h, 0.0f);
  }
  // Routed experts on this rank's token slice: mirror of the forward.
  dispatch_.combine_backward(a, c_.at(ws.g_a, c_.coords.t * Tm * h));
  experts_backward(a, w);
  void* dx = c_.at(ws.g_b, c_.coords.t * Tm * h);
  dispatch_.dispatch_backward(a, dx);
  c_.mark(kGemm);
  linear_dgrad(c_, w_.dense, w.router, dispatch_.router_grad().data(), Tm, dx, 1.0);
  linear_wgrad(c_, w_.dense, w.router, c_.at(a.x_mid, c_.coords.t * Tm * h), dispatch_.router_grad().data(),
               Tm);
  c_.tp_reduce(ws.g_b.data(), "moe_dgrad");
  c_.mark(kElementwise);
  c_.k->add(c_.my_rows(ws.g_b), c_.my_rows(ws.g_a), c_.dt, c_.rows * h);
}

// d expert output (expert-major, scratch_b) → d expert input (expert-major, scratch_a), weight gradients.
void MoeLayer::experts_backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t h = c_.m.hidden, up = c_.swiglu() ? 2 : 1, f = c_.l.expert_ffn;
  auto& sa = dispatch_.scratch_a();
  auto& sb = dispatch_.scratch_b();
  c_.mark(kGemm);
  std::int64_t row = 0;
  for (std::int64_t e = 0; e < c_.l.local_experts; ++e) {
    const std::int64_t n = a.expert_rows[e], t_down = w.expert_up + 2 * e + 1;
    linear_dgrad(c_, w_.experts, t_down, c_.at(sb, row * h), n, c_.at(sa, row * f));
    linear_wgrad(c_, w_.experts, t_down, c_.at(a.e_act, row * f), c_.at(sb, row * h), n);
    row += n;
  }
  c_.mark(kElementwise);
  c_.k->activation_backward(c_.swiglu(), a.e_up.data(), sa.data(), c_.dt, f, a.received, a.e_up.data());
  c_.mark(kGemm);
  row = 0;
  for (std::int64_t e = 0; e < c_.l.local_experts; ++e) {
    const std::int64_t n = a.expert_rows[e], t_up = w.expert_up + 2 * e;
    linear_dgrad(c_, w_.experts, t_up, c_.at(a.e_up, row * up * f), n, c_.at(sa, row * h));
    linear_wgrad(c_, w_.experts, t_up, c_.at(a.expert_in, row * h), c_.at(a.e_up, row * up * f), n);
    row += n;
  }
}

}  // namespace fb::workloads::train
