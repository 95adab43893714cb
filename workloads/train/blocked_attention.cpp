// Causal attention on lower-triangular blocks through the GEMM engine: query block i of B tokens against
// keys [0, (i+1)·B), one GEMM per query head of a kv group, batched over the groups (GQA shares K and V:
// heads side by side in a token row, so the batch stride is one head's columns), the causal softmax kernel
// on the score strips, and the context GEMM. The probability strips are saved for backward (dP, dV, softmax
// backward, dQ, dK on the same blocks); with --recompute selective no layer saves them: one buffer holds
// the strips of whichever layer ran its core forward last, and the layer's backward runs the forward again
// (workloads/train/attention_layer.cpp).
#include <cmath>

#include "workloads/train/attention_core.hpp"

namespace fb::workloads::train {
namespace {

class BlockedAttention final : public AttentionCore {
 public:
  explicit BlockedAttention(StepContext& c)
      : c_(c),
        W(c.l.qkv_width),
        d(c.l.head_dim),
        dv(c.l.v_head_dim),
        B(c.l.attn_block),
        nb(c.l.seq / c.l.attn_block),
        G(c.l.kv_heads),
        hpg(c.l.heads / c.l.kv_heads),
        HD(c.l.heads * c.l.v_head_dim),
        k_col(c.l.heads * c.l.head_dim),
        v_col(c.l.heads * c.l.head_dim + c.l.kv_heads * c.l.head_dim),
        scale(1.0f / std::sqrt(static_cast<float>(c.l.head_dim))) {
    probs_per_seq_ = c.l.heads * B * B * nb * (nb + 1) / 2;
    dprobs_ = c.act(c.l.heads * c.l.seq * B);
    if (c.plan.shape.recompute == Recompute::selective)
      shared_probs_ = c.act(probs_per_seq_ * c.plan.shape.micro_batch);
  }
  void allocate(LayerActs& a) override {
    if (!shared_probs_.data()) a.probs = c_.act(probs_per_seq_ * c_.plan.shape.micro_batch);
  }
  void forward(LayerActs& a) override;
  void backward(LayerActs& a, const void* dctx, void* dqkv) override;

 private:
  // Strip i: query block i attends keys [0, (i+1)·B); its probabilities start `offset` elements into the
  // sequence's region, head slot (j·G + g) of the strip `size` elements apart.
  struct Strip {
    std::int64_t keys, offset, size;
  };
  Strip strip(std::int64_t i) const {
    return {(i + 1) * B, c_.l.heads * B * B * i * (i + 1) / 2, (i + 1) * B * B};
  }
  // Token-major addresses: column `col` of token `t` in qkv (W wide) or ctx (heads·v_head_dim wide).
  const void* qkv(const LayerActs& a, std::int64_t t, std::int64_t col) const {
    return c_.at(a.qkv, t * c_.l.qkv_width + col);
  }
  void* grad(void* dqkv, std::int64_t t, std::int64_t col) const {
    return c_.at(dqkv, t * c_.l.qkv_width + col);
  }

  StepContext& c_;
  // qkv row width, Q/K and V head dims, block size and count, kv groups and heads per group, ctx row width,
  // where K and V start in a qkv row, the softmax scale.
  const std::int64_t W, d, dv, B, nb, G, hpg, HD, k_col, v_col;
  const float scale;
  // Where layer `a`'s probability strips are: its own, or the shared buffer (selective recomputation).
  const DeviceBuffer& probs(const LayerActs& a) const { return a.probs.data() ? a.probs : shared_probs_; }

  std::int64_t probs_per_seq_ = 0;
  DeviceBuffer dprobs_, shared_probs_;
};

void BlockedAttention::forward(LayerActs& a) {
  c_.mark(kAttention);
  const auto& l = c_.l;
  for (std::int64_t s = 0; s < c_.plan.shape.micro_batch; ++s) {
    const std::int64_t t0 = s * l.seq;
    for (std::int64_t i = 0; i < nb; ++i) {
      const auto [keys, off, sz] = strip(i);
      const std::int64_t q0 = t0 + i * B, p0 = s * probs_per_seq_ + off;
      for (std::int64_t j = 0; j < hpg; ++j)  // S = Kᵀ·Q (keys × B), head g·hpg + j for each group g
        c_.gemm(keys, B, d, true, false, qkv(a, t0, k_col), W, qkv(a, q0, j * d), W,
                c_.at(probs(a), p0 + j * G * sz), keys, 0.0, G, d, hpg * d, sz);
      c_.k->causal_softmax(c_.at(probs(a), p0), c_.dt, keys, B, i * B, l.heads, sz, scale);
      for (std::int64_t j = 0; j < hpg; ++j)  // O = V·P (dv × B)
        c_.gemm(dv, B, keys, false, false, qkv(a, t0, v_col), W, c_.at(probs(a), p0 + j * G * sz), keys,
                c_.at(a.ctx, q0 * HD + j * dv), HD, 0.0, G, dv, sz, hpg * dv);
    }
  }
}

void BlockedAttention::backward(LayerActs& a, const void* dctx, void* dqkv) {
  c_.mark(kAttention);
  const auto& l = c_.l;
  c_.k->scale(dqkv, c_.dt, l.tokens * W, 0.0f);  // dK and dV accumulate over the strips
  const auto d_o = [&](std::int64_t t, std::int64_t col) {
    return static_cast<const char*>(dctx) + (t * HD + col) * c_.elem();
  };
  for (std::int64_t s = 0; s < c_.plan.shape.micro_batch; ++s) {
    const std::int64_t t0 = s * l.seq;
    for (std::int64_t i = 0; i < nb; ++i) {
      const auto [keys, off, sz] = strip(i);
      const std::int64_t q0 = t0 + i * B, p0 = s * probs_per_seq_ + off;
      for (std::int64_t j = 0; j < hpg; ++j) {
        void* dP = c_.at(dprobs_, j * G * sz);
        // dP = Vᵀ·dO (keys × B); dV += dO·Pᵀ (dv × keys).
        c_.gemm(keys, B, dv, true, false, qkv(a, t0, v_col), W, d_o(q0, j * dv), HD, dP, keys, 0.0, G, dv,
                hpg * dv, sz);
        c_.gemm(dv, keys, B, false, true, d_o(q0, j * dv), HD, c_.at(probs(a), p0 + j * G * sz), keys,
                grad(dqkv, t0, v_col), W, 1.0, G, hpg * dv, sz, dv);
      }
      c_.k->softmax_backward(c_.at(probs(a), p0), dprobs_.data(), c_.dt, keys, B, l.heads, sz, scale);
      for (std::int64_t j = 0; j < hpg; ++j) {
        const void* dS = c_.at(dprobs_, j * G * sz);
        // dQ = K·dS (d × B); dK += Q·dSᵀ (d × keys).
        c_.gemm(d, B, keys, false, false, qkv(a, t0, k_col), W, dS, keys, grad(dqkv, q0, j * d), W, 0.0, G, d,
                sz, hpg * d);
        c_.gemm(d, keys, B, false, true, qkv(a, q0, j * d), W, dS, keys, grad(dqkv, t0, k_col), W, 1.0, G,
                hpg * d, sz, d);
      }
    }
  }
}

}  // namespace

std::unique_ptr<AttentionCore> make_blocked_attention(StepContext& c) {
  return std::make_unique<BlockedAttention>(c);
}

}  // namespace fb::workloads::train
