#include "workloads/train/mla_attention.hpp"

namespace fb::workloads::train {
namespace {

// Multi-head latent attention (DeepSeek-V2/V3), token-major. The down projections write the latent
// [c_q | c_kv | k_rope] (L = q_lora + kv_lora + rope columns); its norms and the rotated k_rope make
// latent_n = [norm(c_q) | norm(c_kv) | rope(k_rope)], which the up projections read: q_up → Q (each head
// [q_nope | q_rope], q_rope rotated), kv_up → [V | k_nope] at the V columns of qkv. Each head's key
// K_j = [k_nope_j | the shared rotated k_rope] is assembled so the attention core runs with head dim
// nope + rope for the scores and v_head_dim for the context.
class MlaProjection final : public QkvProjection {
 public:
  MlaProjection(StepContext& c, Region& dense) : c_(c), dense_(dense) {
    dlat_n_ = c.act(c.l.tokens * c.l.mla_latent);
    dlat_ = c.act(c.l.tokens * c.l.mla_latent);
  }
  void allocate(LayerActs& a) override {
    const std::int64_t T = c_.l.tokens;
    a.latent = c_.act(T * c_.l.mla_latent);
    a.latent_n = c_.act(T * c_.l.mla_latent);
    a.rstd_q = c_.alloc(T, 4);
    a.rstd_kv = c_.alloc(T, 4);
  }
  void forward(LayerActs& a, const LayerWeights& w) override;
  void backward(LayerActs& a, const LayerWeights& w) override;

 private:
  void latent_forward(LayerActs& a, const LayerWeights& w);
  void assemble_keys(LayerActs& a);
  void up_projections_backward(LayerActs& a, const LayerWeights& w);
  void latent_backward(LayerActs& a, const LayerWeights& w);
  void down_projections_backward(LayerActs& a, const LayerWeights& w);

  const MlaConfig& m() const { return *c_.m.mla; }
  std::int64_t L() const { return c_.l.mla_latent; }
  std::int64_t W() const { return c_.l.qkv_width; }
  std::int64_t k_col() const { return c_.l.heads * c_.l.head_dim; }
  std::int64_t v_col() const { return 2 * c_.l.heads * c_.l.head_dim; }
  std::int64_t staged_col() const { return v_col() + c_.l.heads * c_.l.v_head_dim; }  // kv_up's k_nope
  std::int64_t rope_col() const { return m().q_lora_rank + m().kv_lora_rank; }        // k_rope in the latent
  void rope(void* p, std::int64_t ld, std::int64_t col0, std::int64_t heads, std::int64_t stride,
            bool inverse) {
    c_.mark(kElementwise);
    c_.k->rope(p, c_.dt, c_.l.tokens, ld, col0, heads, stride, m().qk_rope_head_dim, c_.l.seq,
               c_.m.rope_theta, inverse);
  }

  StepContext& c_;
  Region& dense_;
  DeviceBuffer dlat_n_, dlat_;  // gradients of latent_n and of latent
};

void MlaProjection::forward(LayerActs& a, const LayerWeights& w) {
  latent_forward(a, w);
  const std::int64_t T = c_.l.tokens, nh = c_.l.heads, dq = c_.l.head_dim;
  c_.mark(kGemm);
  if (m().q_lora_rank > 0)
    linear_forward(c_, dense_, w.q_up, a.latent_n.data(), T, a.qkv.data(), 0, L(), W());
  else
    linear_forward(c_, dense_, w.q, a.xn_in.data(), T, a.qkv.data(), 0, 0, W());
  linear_forward(c_, dense_, w.kv_up, c_.at(a.latent_n, m().q_lora_rank), T, c_.at(a.qkv, v_col()), 0, L(),
                 W());
  rope(a.qkv.data(), W(), m().qk_nope_head_dim, nh, dq, false);  // each query head's rope part
  assemble_keys(a);
}

// The down projections, the latent norms and the rotation of k_rope.
void MlaProjection::latent_forward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, ql = m().q_lora_rank, kvl = m().kv_lora_rank;
  c_.mark(kGemm);
  if (ql > 0) linear_forward(c_, dense_, w.q_down, a.xn_in.data(), T, a.latent.data(), 0, 0, L());
  linear_forward(c_, dense_, w.kv_down, a.xn_in.data(), T, c_.at(a.latent, ql), 0, 0, L());
  c_.mark(kElementwise);
  if (ql > 0)
    c_.k->rmsnorm_forward(a.latent.data(), nullptr, nullptr, weight(c_, dense_, w.q_norm), a.latent_n.data(),
                          a.rstd_q.as<float>(), c_.dt, T, ql, L(), c_.m.norm_eps);
  c_.k->rmsnorm_forward(c_.at(a.latent, ql), nullptr, nullptr, weight(c_, dense_, w.kv_norm),
                        c_.at(a.latent_n, ql), a.rstd_kv.as<float>(), c_.dt, T, kvl, L(), c_.m.norm_eps);
  c_.k->copy_heads(a.latent.data(), L(), rope_col(), 0, a.latent_n.data(), L(), rope_col(), 0, c_.dt, T, 1,
                   m().qk_rope_head_dim, false);
  rope(a.latent_n.data(), L(), rope_col(), 1, 0, false);
}

// K_j = [k_nope_j (staged after V by kv_up) | k_rope (shared by every head)].
void MlaProjection::assemble_keys(LayerActs& a) {
  const std::int64_t T = c_.l.tokens, nh = c_.l.heads, dq = c_.l.head_dim, nope = m().qk_nope_head_dim;
  c_.mark(kElementwise);
  c_.k->copy_heads(a.qkv.data(), W(), staged_col(), nope, a.qkv.data(), W(), k_col(), dq, c_.dt, T, nh, nope,
                   false);
  c_.k->copy_heads(a.latent_n.data(), L(), rope_col(), 0, a.qkv.data(), W(), k_col() + nope, dq, c_.dt, T, nh,
                   m().qk_rope_head_dim, false);
}

// From d qkv (g_a: dQ, dK, dV): kv_up's output gradient [dV | d k_nope], the shared k_rope's gradient summed
// over heads, and the up projections' dgrad/wgrad into dlat_n.
void MlaProjection::up_projections_backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, nh = c_.l.heads, dq = c_.l.head_dim, nope = m().qk_nope_head_dim;
  const std::int64_t ql = m().q_lora_rank;
  void* dqkv = c_.ws.g_a.data();
  c_.mark(kElementwise);
  c_.k->copy_heads(dqkv, W(), k_col(), dq, dqkv, W(), staged_col(), nope, c_.dt, T, nh, nope, false);
  c_.k->copy_heads(dqkv, W(), k_col() + nope, dq, dlat_n_.data(), L(), rope_col(), 0, c_.dt, T, nh,
                   m().qk_rope_head_dim, false);
  rope(dqkv, W(), nope, nh, dq, true);
  c_.mark(kGemm);
  linear_dgrad(c_, dense_, w.kv_up, c_.at(dqkv, v_col()), T, c_.at(dlat_n_, ql), 0, W(), L());
  linear_wgrad(c_, dense_, w.kv_up, c_.at(a.latent_n, ql), c_.at(dqkv, v_col()), T, L(), W());
  if (ql > 0) {
    linear_dgrad(c_, dense_, w.q_up, dqkv, T, dlat_n_.data(), 0, W(), L());
    linear_wgrad(c_, dense_, w.q_up, a.latent_n.data(), dqkv, T, L(), W());
  }
}

// dlat_n → dlat: k_rope rotated back, the latent norms' backward (gains' gradients accumulated).
void MlaProjection::latent_backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, ql = m().q_lora_rank, kvl = m().kv_lora_rank;
  rope(dlat_n_.data(), L(), rope_col(), 1, 0, true);
  c_.mark(kElementwise);
  c_.k->copy_heads(dlat_n_.data(), L(), rope_col(), 0, dlat_.data(), L(), rope_col(), 0, c_.dt, T, 1,
                   m().qk_rope_head_dim, false);
  if (ql > 0)
    c_.k->rmsnorm_backward(dlat_n_.data(), a.latent.data(), weight(c_, dense_, w.q_norm),
                           a.rstd_q.as<float>(), nullptr, dlat_.data(), weight_grad(c_, dense_, w.q_norm),
                           c_.dt, T, ql, L());
  c_.k->rmsnorm_backward(c_.at(dlat_n_, ql), c_.at(a.latent, ql), weight(c_, dense_, w.kv_norm),
                         a.rstd_kv.as<float>(), nullptr, c_.at(dlat_, ql), weight_grad(c_, dense_, w.kv_norm),
                         c_.dt, T, kvl, L());
}

// The replicated down projections give the full d xn_in on every rank (g_c); with q_lora_rank 0 the query
// projection's part is partial and TP-reduced.
void MlaProjection::down_projections_backward(LayerActs& a, const LayerWeights& w) {
  const std::int64_t T = c_.l.tokens, h = c_.m.hidden, ql = m().q_lora_rank;
  void* dqkv = c_.ws.g_a.data();
  void* g_c = c_.ws.g_c.data();
  c_.mark(kGemm);
  if (ql > 0) {
    linear_dgrad(c_, dense_, w.q_down, dlat_.data(), T, g_c, 0, L(), 0);
    linear_wgrad(c_, dense_, w.q_down, a.xn_in.data(), dlat_.data(), T, 0, L());
  }
  linear_dgrad(c_, dense_, w.kv_down, c_.at(dlat_, ql), T, g_c, ql > 0 ? 1.0 : 0.0, L(), 0);
  linear_wgrad(c_, dense_, w.kv_down, a.xn_in.data(), c_.at(dlat_, ql), T, 0, L());
  if (ql == 0) {
    void* tmp = c_.ws.tmp.data();
    linear_dgrad(c_, dense_, w.q, dqkv, T, tmp, 0, W(), 0);
    linear_wgrad(c_, dense_, w.q, a.xn_in.data(), dqkv, T, 0, W());
    c_.tp_reduce(tmp, "q_dgrad");
    c_.mark(kElementwise);
    c_.k->add(c_.my_rows(g_c), c_.my_rows(tmp), c_.dt, c_.rows * h);
  }
}

// One TP all-reduce of the normed latent's gradient between the two halves: the up projections are
// column-parallel, and the latent norms then run (identically) on every TP rank.
void MlaProjection::backward(LayerActs& a, const LayerWeights& w) {
  up_projections_backward(a, w);
  if (c_.o.parallel.tp > 1) {
    const std::int64_t n = c_.l.tokens * L();
    c_.mark(kTpComm);
    c_.groups.tp->allreduce(dlat_n_.data(), dlat_n_.data(), static_cast<std::size_t>(n), c_.dt,
                            ReduceOp::sum);
    c_.count_collective("tp_allreduce/mla_latent_grad", static_cast<double>(n * c_.elem()));
  }
  latent_backward(a, w);
  down_projections_backward(a, w);
}

}  // namespace

std::unique_ptr<QkvProjection> make_mla_projection(StepContext& c, Region& dense) {
  return std::make_unique<MlaProjection>(c, dense);
}

}  // namespace fb::workloads::train
