#include "workloads/train/mla_attention.hpp"

#include <vector>

namespace fb::workloads::train {
namespace {

// Feature-major layout: latent = [c_q | c_kv | k_rope] from the down projections; Q from q_up (or q);
// kv_up writes [V | k_nope] at the V columns of qkv_t; each head's K = [k_nope_j | k_rope] is assembled so
// the attention core runs one GEMM with head dim nope + rope for scores and v_head_dim for the context.
class MlaProjection final : public QkvProjection {
 public:
  MlaProjection(StepContext& c, Region& dense);
  void allocate(LayerActs& a) override { a.latent = c_.act(c_.l.tokens * c_.l.mla_latent); }
  void forward(LayerActs& a, const LayerWeights& w) override;
  void backward(LayerActs& a, const LayerWeights& w) override;

 private:
  void up_projections_backward(LayerActs& a, const LayerWeights& w);
  void down_projections_backward(LayerActs& a, const LayerWeights& w);
  const void* W(std::int64_t t) const { return weight(c_, dense_, t); }
  void* dW(std::int64_t t) { return weight_grad(c_, dense_, t); }
  StepContext& c_;
  Region& dense_;
  // Column blocks of the K assembly (forward) and of its gradient (backward), per head j:
  // K_j = [k_nope_j (from kv_up's output, staged after V) | k_rope (latent's last columns)].
  std::vector<std::int64_t> k_nope_, nope_staged_, nope_cols_, k_rope_, rope_latent_, rope_cols_;
  DeviceBuffer dlat_;  // the latent's gradient
};

MlaProjection::MlaProjection(StepContext& c, Region& dense) : c_(c), dense_(dense) {
  const auto& m = *c.m.mla;
  const std::int64_t nh = c.l.heads, dq = c.l.head_dim, nope = m.qk_nope_head_dim;
  const std::int64_t k_col = nh * dq, staged = 2 * nh * dq + nh * c.l.v_head_dim;
  for (std::int64_t j = 0; j < nh; ++j) {
    k_nope_.push_back(k_col + j * dq);
    nope_staged_.push_back(staged + j * nope);
    nope_cols_.push_back(nope);
    k_rope_.push_back(k_col + j * dq + nope);
    rope_latent_.push_back(m.q_lora_rank + m.kv_lora_rank);
    rope_cols_.push_back(m.qk_rope_head_dim);
  }
  dlat_ = c.act(c.l.tokens * c.l.mla_latent);
}

void MlaProjection::forward(LayerActs& a, const LayerWeights& w) {
  const auto& m = *c_.m.mla;
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, nh = c_.l.heads, dq = c_.l.head_dim;
  const std::int64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, rope = m.qk_rope_head_dim;
  const std::int64_t v_col = 2 * nh * dq;
  c_.mark(kGemm);
  if (ql > 0) {
    c_.gemm(T, ql, h, true, false, a.x_in.data(), h, W(w.q_down), h, a.latent.data(), T, 0.0);
    c_.gemm(T, nh * dq, ql, false, false, a.latent.data(), T, W(w.q_up), ql, a.qkv_t.data(), T, 0.0);
  } else {
    c_.gemm(T, nh * dq, h, true, false, a.x_in.data(), h, W(w.q), h, a.qkv_t.data(), T, 0.0);
  }
  c_.gemm(T, kvl + rope, h, true, false, a.x_in.data(), h, W(w.kv_down), h, c_.at(a.latent, ql * T), T, 0.0);
  c_.gemm(T, nh * (c_.l.v_head_dim + m.qk_nope_head_dim), kvl, false, false, c_.at(a.latent, ql * T), T,
          W(w.kv_up), kvl, c_.at(a.qkv_t, v_col * T), T, 0.0);
  c_.mark(kElementwise);
  c_.copy_columns(a.qkv_t.data(), a.qkv_t.data(), nope_staged_, k_nope_, nope_cols_);
  c_.copy_columns(a.latent.data(), a.qkv_t.data(), rope_latent_, k_rope_, rope_cols_);
}

// From d qkv_t (g_a: dQ, dK, dV): kv_up's output gradient [dV | d k_nope], the shared rope half's gradient
// summed over heads, and the up projections' dgrad/wgrad into the latent gradient.
void MlaProjection::up_projections_backward(LayerActs& a, const LayerWeights& w) {
  const auto& m = *c_.m.mla;
  const std::int64_t T = c_.l.tokens, nh = c_.l.heads, dq = c_.l.head_dim, dv = c_.l.v_head_dim;
  const std::int64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, rope = m.qk_rope_head_dim;
  const std::int64_t nope = m.qk_nope_head_dim, v_col = 2 * nh * dq;
  void* dqkv = c_.ws.g_a.data();
  c_.mark(kElementwise);
  c_.copy_columns(dqkv, dqkv, k_nope_, nope_staged_, nope_cols_);
  void* d_rope = c_.at(dlat_, (ql + kvl) * T);
  c_.k->scale(d_rope, c_.dt, T * rope, 0.0f);
  for (std::int64_t j = 0; j < nh; ++j)
    c_.k->add(d_rope, c_.at(dqkv, (nh * dq + j * dq + nope) * T), c_.dt, T * rope);
  c_.mark(kGemm);
  const std::int64_t kv_out = nh * (dv + nope);
  c_.gemm(T, kvl, kv_out, false, true, c_.at(dqkv, v_col * T), T, W(w.kv_up), kvl, c_.at(dlat_, ql * T), T,
          0.0);
  c_.gemm(kvl, kv_out, T, true, false, c_.at(a.latent, ql * T), T, c_.at(dqkv, v_col * T), T, dW(w.kv_up),
          kvl, 1.0);
  if (ql > 0) {
    c_.gemm(T, ql, nh * dq, false, true, dqkv, T, W(w.q_up), ql, dlat_.data(), T, 0.0);
    c_.gemm(ql, nh * dq, T, true, false, a.latent.data(), T, dqkv, T, dW(w.q_up), ql, 1.0);
  }
}

// The replicated down projections give the full d x_in on every rank (g_c); with q_lora_rank 0 the query
// projection's part is partial and TP-reduced.
void MlaProjection::down_projections_backward(LayerActs& a, const LayerWeights& w) {
  const auto& m = *c_.m.mla;
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, nh = c_.l.heads, dq = c_.l.head_dim;
  const std::int64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank, rope = m.qk_rope_head_dim;
  void* dqkv = c_.ws.g_a.data();
  void* g_c = c_.ws.g_c.data();
  c_.mark(kGemm);
  if (ql > 0) {
    c_.gemm(h, T, ql, false, true, W(w.q_down), h, dlat_.data(), T, g_c, h, 0.0);
    c_.gemm(h, ql, T, false, false, a.x_in.data(), h, dlat_.data(), T, dW(w.q_down), h, 1.0);
  }
  c_.gemm(h, T, kvl + rope, false, true, W(w.kv_down), h, c_.at(dlat_, ql * T), T, g_c, h,
          ql > 0 ? 1.0 : 0.0);
  c_.gemm(h, kvl + rope, T, false, false, a.x_in.data(), h, c_.at(dlat_, ql * T), T, dW(w.kv_down), h, 1.0);
  if (ql == 0) {
    void* tmp = c_.ws.tmp.data();
    c_.gemm(h, T, nh * dq, false, true, W(w.q), h, dqkv, T, tmp, h, 0.0);
    c_.gemm(h, nh * dq, T, false, false, a.x_in.data(), h, dqkv, T, dW(w.q), h, 1.0);
    c_.tp_reduce(tmp, "q_dgrad");
    c_.mark(kElementwise);
    c_.k->add(c_.my_rows(g_c), c_.my_rows(tmp), c_.dt, c_.rows * h);
  }
}

// One TP all-reduce of the latent gradient between the two halves: the up projections are column-parallel.
void MlaProjection::backward(LayerActs& a, const LayerWeights& w) {
  up_projections_backward(a, w);
  if (c_.o.parallel.tp > 1) {
    const std::int64_t n = c_.l.tokens * c_.l.mla_latent;
    c_.mark(kTpComm);
    c_.groups.tp->allreduce(dlat_.data(), dlat_.data(), static_cast<std::size_t>(n), c_.dt, ReduceOp::sum);
    c_.count_bytes("tp_allreduce/mla_latent_grad", static_cast<double>(n * c_.elem()));
  }
  down_projections_backward(a, w);
}

}  // namespace

std::unique_ptr<QkvProjection> make_mla_projection(StepContext& c, Region& dense) {
  return std::make_unique<MlaProjection>(c, dense);
}

}  // namespace fb::workloads::train
