#include "workloads/model_flops.hpp"

#include <string>

#include "core/error.hpp"

namespace fb::workloads {

AttentionFlops parse_attention_flops(std::string_view text) {
  return parse_enum(kAttentionFlopsNames, text, "--attention-flops");
}

std::string_view to_string(AttentionFlops a) {
  return enum_name(kAttentionFlopsNames, a);
}

Recompute parse_recompute(std::string_view text) {
  return parse_enum(kRecomputeNames, text, "--recompute");
}

std::string_view to_string(Recompute r) {
  return enum_name(kRecomputeNames, r);
}

FlopsPerToken model_flops_per_token(const ModelConfig& m, std::int64_t seq_len, AttentionFlops attention) {
  // Everything in double: the products overflow 64-bit integers for large models only when multiplied by
  // tokens, but double keeps the formula readable and matches Megatron's Python floats.
  const double h = static_cast<double>(m.hidden);
  const double s = static_cast<double>(seq_len);
  const double mtp = static_cast<double>(m.mtp_layers);
  // MTP layers count as extra transformer layers of the kind the last layer is (Megatron: last_layer_is_moe).
  const bool last_is_moe = m.is_moe_layer(m.layers - 1);
  const double moe_layers = static_cast<double>(m.moe_layer_count()) + (last_is_moe ? mtp : 0.0);
  const double dense_layers = static_cast<double>(m.dense_layer_count()) + (last_is_moe ? 0.0 : mtp);
  const double layers = static_cast<double>(m.layers) + mtp;
  const double gated = m.activation == Activation::swiglu ? 1.5 : 1.0;  // SwiGLU: 3 GEMMs instead of 2
  const double causal = attention == AttentionFlops::causal ? 0.5 : 1.0;
  // 3 passes (fwd, dgrad, wgrad) x 2 FLOPs per multiply-add x 2 stacked GEMMs (in and out of a block).
  constexpr double kExpansion = 3 * 2 * 2;

  FlopsPerToken f;
  f.mlp_dense = kExpansion * h * static_cast<double>(m.ffn) * gated * dense_layers;
  if (m.moe) {
    f.moe_routed =
        kExpansion * h * static_cast<double>(m.moe->expert_ffn * m.moe->top_k) * gated * moe_layers;
    f.moe_shared = kExpansion * h * static_cast<double>(m.moe->shared_ffn) * gated * moe_layers;
  }

  const double nh = static_cast<double>(m.heads);
  if (m.mla) {
    const auto& a = *m.mla;
    const double qk = static_cast<double>(a.qk_nope_head_dim), rope = static_cast<double>(a.qk_rope_head_dim);
    const double v = static_cast<double>(a.v_head_dim), kv_lora = static_cast<double>(a.kv_lora_rank);
    const double q_lora = static_cast<double>(a.q_lora_rank);
    // The "+ 1" terms are Megatron's q/kv LoRA norms.
    const double q_term = a.q_lora_rank > 0 ? q_lora * (h + nh * (qk + rope) + 1) : h * nh * (qk + rope);
    const double kv_term = kv_lora * (h + nh * (qk + v) + 1) + h * rope;
    const double o_term = nh * v * h;
    const double core = s * nh * (qk + rope) * causal + s * nh * v * causal;
    f.attention_projections = 3 * 2 * layers * (q_term + kv_term + o_term);
    f.attention_core = 3 * 2 * layers * core;
  } else {
    // Megatron: 12·L·h²·((1 + G/H + s/h/2)·q_ratio) with q_ratio = heads·head_dim/h; written in projection
    // sizes this is 6·L·h·(2·q + 2·kv) for Q, O, K, V and 12·L·s·q/2 for the causal core.
    const double q = nh * static_cast<double>(m.head_dim);
    const double kv = static_cast<double>(m.kv_heads) * static_cast<double>(m.head_dim);
    f.attention_projections = kExpansion * layers * h * (q + kv);
    f.attention_core = kExpansion * layers * s * q * causal;
  }

  f.mtp_projection = 3 * 2 * mtp * (3 * h + 2 * h * h);
  f.logits = 3 * 2 * h * static_cast<double>(m.vocab) * (mtp + 1);
  return f;
}

double hardware_flops_per_token(const FlopsPerToken& f, Recompute recompute) {
  switch (recompute) {
    case Recompute::none:
      return f.total();
    case Recompute::selective:
      return f.total() + f.attention_core / 3;
    case Recompute::full:
      return f.total() + (f.total() - f.logits) / 3;
  }
  return f.total();
}

namespace {

double mlp_params(double h, double ffn, Activation act) {
  return (act == Activation::swiglu ? 3 : 2) * h * ffn;
}

double attention_params(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden), nh = static_cast<double>(m.heads);
  if (m.mla) {
    const auto& a = *m.mla;
    const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
    const double q_lora = static_cast<double>(a.q_lora_rank), kv_lora = static_cast<double>(a.kv_lora_rank);
    const double q = a.q_lora_rank > 0 ? h * q_lora + q_lora + q_lora * nh * qk : h * nh * qk;
    const double kv = h * (kv_lora + static_cast<double>(a.qk_rope_head_dim)) + kv_lora +
                      kv_lora * nh * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
    return q + kv + nh * static_cast<double>(a.v_head_dim) * h;
  }
  const double q = nh * static_cast<double>(m.head_dim);
  const double kv = static_cast<double>(m.kv_heads * m.head_dim);
  return 2 * h * q + 2 * h * kv;
}

}  // namespace

ParameterCounts parameter_counts(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden);
  const double attn = attention_params(m) + 2 * h;  // + the two pre-norms of the layer
  const double dense_mlp = mlp_params(h, static_cast<double>(m.ffn), m.activation);
  double moe_total = 0, moe_active = 0;
  if (m.moe) {
    const auto& e = *m.moe;
    const double expert = mlp_params(h, static_cast<double>(e.expert_ffn), m.activation);
    const double shared = mlp_params(h, static_cast<double>(e.shared_ffn), m.activation);
    const double router = h * static_cast<double>(e.experts);
    moe_total = static_cast<double>(e.experts) * expert + shared + router;
    moe_active = static_cast<double>(e.top_k) * expert + shared + router;
  }
  const double n_moe = static_cast<double>(m.moe_layer_count());
  const double n_dense = static_cast<double>(m.dense_layer_count());
  ParameterCounts p;
  p.embedding = 2 * static_cast<double>(m.vocab) * h;
  p.total = p.embedding + h /* final norm */ + static_cast<double>(m.layers) * attn + n_dense * dense_mlp +
            n_moe * moe_total;
  p.active =
      p.embedding + h + static_cast<double>(m.layers) * attn + n_dense * dense_mlp + n_moe * moe_active;
  if (m.mtp_layers > 0) {
    const bool last_is_moe = m.is_moe_layer(m.layers - 1);
    const double mtp_fixed = 2 * h * h + 3 * h + attn;
    const double mtp = static_cast<double>(m.mtp_layers);
    p.total += mtp * (mtp_fixed + (last_is_moe ? moe_total : dense_mlp));
    p.active += mtp * (mtp_fixed + (last_is_moe ? moe_active : dense_mlp));
  }
  return p;
}

}  // namespace fb::workloads
