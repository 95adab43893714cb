#include "workloads/train/attention_core.hpp"

#include <cmath>

namespace fb::workloads::train {

AttentionCore::AttentionCore(StepContext& c) : c_(c) {
  const std::int64_t B = c.l.attn_block, nb = c.l.seq / B;
  probs_per_seq_ = c.l.heads * B * B * nb * (nb + 1) / 2;
  dprobs_ = c.act(c.l.heads * c.l.seq * B);
}

AttentionCore::Strip AttentionCore::strip(std::int64_t i) const {
  const std::int64_t B = c_.l.attn_block;
  return {(i + 1) * B, c_.l.heads * B * B * i * (i + 1) / 2};
}

// One GEMM per query head of a kv group, batched over the groups. Q/K head dim d, V head dim dv.
void AttentionCore::forward(LayerActs& a) {
  c_.mark(kAttention);
  const auto& l = c_.l;
  const std::int64_t T = l.tokens, d = l.head_dim, dv = l.v_head_dim, B = l.attn_block, nb = l.seq / B;
  const std::int64_t G = l.kv_heads, hpg = l.heads / G;
  const std::int64_t k_col = l.heads * d, v_col = k_col + G * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (std::int64_t s = 0; s < c_.plan.shape.micro_batch; ++s) {
    const std::int64_t t0 = s * l.seq;
    for (std::int64_t i = 0; i < nb; ++i) {
      const auto [keys, off] = strip(i);
      void* probs = c_.at(a.probs, s * probs_per_seq_ + off);
      const std::int64_t sz = keys * B;
      for (std::int64_t j = 0; j < hpg; ++j) {
        const void* K = c_.at(a.qkv_t, k_col * T + t0);
        const void* Q = c_.at(a.qkv_t, j * d * T + t0 + i * B);
        c_.gemm(keys, B, d, false, true, K, T, Q, T, c_.at(a.probs, s * probs_per_seq_ + off + j * G * sz),
                keys, 0.0, G, d * T, hpg * d * T, sz);
      }
      c_.k->causal_softmax(probs, c_.dt, keys, B, i * B, l.heads, sz, scale);
      for (std::int64_t j = 0; j < hpg; ++j) {
        const void* P = c_.at(a.probs, s * probs_per_seq_ + off + j * G * sz);
        const void* V = c_.at(a.qkv_t, v_col * T + t0);
        c_.gemm(B, dv, keys, true, false, P, keys, V, T, c_.at(a.ctx_t, j * dv * T + t0 + i * B), T, 0.0, G,
                sz, dv * T, hpg * dv * T);
      }
    }
  }
}

void AttentionCore::backward(LayerActs& a, const void* dctx, void* dqkv) {
  const auto& l = c_.l;
  const std::int64_t T = l.tokens, d = l.head_dim, dv = l.v_head_dim, B = l.attn_block, nb = l.seq / B;
  const std::int64_t G = l.kv_heads, hpg = l.heads / G;
  const std::int64_t k_col = l.heads * d, v_col = k_col + G * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const auto cat = [&](const void* p, std::int64_t off) {
    return static_cast<const char*>(p) + off * c_.elem();
  };
  for (std::int64_t s = 0; s < c_.plan.shape.micro_batch; ++s) {
    const std::int64_t t0 = s * l.seq;
    for (std::int64_t i = 0; i < nb; ++i) {
      const auto [keys, off] = strip(i);
      const std::int64_t sz = keys * B;
      for (std::int64_t j = 0; j < hpg; ++j) {
        const void* P = c_.at(a.probs, s * probs_per_seq_ + off + j * G * sz);
        const void* dO = cat(dctx, j * dv * T + t0 + i * B);
        const void* V = c_.at(a.qkv_t, v_col * T + t0);
        void* dP = c_.at(dprobs_, j * G * sz);
        // dP = V·dOᵀ (keys×B); dV += P·dO (keys×dv).
        c_.gemm(keys, B, dv, false, true, V, T, dO, T, dP, keys, 0.0, G, dv * T, hpg * dv * T, sz);
        c_.gemm(keys, dv, B, false, false, P, keys, dO, T, c_.at(dqkv, v_col * T + t0), T, 1.0, G, sz,
                hpg * dv * T, dv * T);
      }
      c_.k->softmax_backward(c_.at(a.probs, s * probs_per_seq_ + off), dprobs_.data(), c_.dt, keys, B,
                             l.heads, sz, scale);
      for (std::int64_t j = 0; j < hpg; ++j) {
        const void* dS = c_.at(dprobs_, j * G * sz);
        const void* K = c_.at(a.qkv_t, k_col * T + t0);
        const void* Q = c_.at(a.qkv_t, j * d * T + t0 + i * B);
        // dQ = dSᵀ·K (B×d); dK += dS·Q (keys×d).
        c_.gemm(B, d, keys, true, false, dS, keys, K, T, c_.at(dqkv, j * d * T + t0 + i * B), T, 0.0, G, sz,
                d * T, hpg * d * T);
        c_.gemm(keys, d, B, false, false, dS, keys, Q, T, c_.at(dqkv, k_col * T + t0), T, 1.0, G, sz,
                hpg * d * T, d * T);
      }
    }
  }
}

}  // namespace fb::workloads::train
