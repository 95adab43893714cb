#include "workloads/layer_gemm_shapes.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

struct Builder {
  std::string prefix;  // "llama3-8b/tp8"
  std::int64_t tokens;
  bool backward;
  std::vector<LayerGemm> out;

  // One linear layer Y[rows×out] = X[rows×in]·Wᵀ, repeated `batch` times (experts), as fwd/dgrad/wgrad.
  void linear(const std::string& role, std::int64_t in, std::int64_t out_features, std::int64_t rows = 0,
              std::int64_t batch = 1) {
    if (rows == 0) rows = tokens;
    auto add = [&](const char* pass, std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb) {
      this->out.push_back(make_layer_gemm(prefix, role, pass, m, n, k, ta, tb, batch));
    };
    add("fwd", out_features, rows, in, true, false);
    if (!backward) return;
    add("dgrad", in, rows, out_features, false, false);
    add("wgrad", in, out_features, rows, false, true);
  }
};

std::int64_t split(const ModelConfig& m, const char* what, std::int64_t value, std::int64_t parts,
                   const char* option) {
  if (value % parts != 0)
    throw input_error(fmt::format("{}: {} {} is not divisible by {} {}", m.name, what, value, option, parts));
  return value / parts;
}

}  // namespace

LayerGemm make_layer_gemm(const std::string& prefix, const std::string& role, const char* pass,
                          std::int64_t m, std::int64_t n, std::int64_t k, bool transa, bool transb,
                          std::int64_t batch) {
  LayerGemm g;
  g.name = fmt::format("{}/{}/{}", prefix, role, pass);
  g.role = role;
  g.pass = pass;
  g.problem.m = m;
  g.problem.n = n;
  g.problem.k = k;
  g.problem.batch = batch;
  g.problem.transa = transa;
  g.problem.transb = transb;
  return g;
}

std::vector<Projection> mla_projections(const ModelConfig& model, std::int64_t tp) {
  if (!model.mla) throw input_error(model.name + ": no mla section");
  const auto& a = *model.mla;
  const std::int64_t heads = split(model, "heads", model.heads, tp, "--tp");
  const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  std::vector<Projection> out;
  if (a.q_lora_rank > 0) {
    out.push_back({"q_down", model.hidden, a.q_lora_rank, true});
    out.push_back({"q_up", a.q_lora_rank, heads * qk});
  } else {
    out.push_back({"q", model.hidden, heads * qk});
  }
  out.push_back({"kv_down", model.hidden, a.kv_lora_rank + a.qk_rope_head_dim, true});
  out.push_back({"kv_up", a.kv_lora_rank, heads * (a.qk_nope_head_dim + a.v_head_dim)});
  out.push_back({"attn_out", heads * a.v_head_dim, model.hidden});
  return out;
}

std::int64_t sequence_length(const ModelConfig& model, std::int64_t seq) {
  if (seq < 0) throw usage_error(fmt::format("invalid --seq {}: must be positive", seq));
  const std::int64_t length = seq > 0 ? seq : model.seq;
  if (length < 1) throw input_error(model.name + ": no training sequence length; pass --seq");
  return length;
}

std::vector<LayerGemm> layer_gemm_shapes(const ModelConfig& model, const LayerShapeOptions& o) {
  const auto positive = [](const char* option, std::int64_t v) {
    if (v < 1) throw usage_error(fmt::format("invalid {} {}: must be at least 1", option, v));
  };
  positive("--tp", o.tp);
  positive("--ep", o.ep);
  positive("--micro-batch", o.micro_batch);
  const std::int64_t seq = sequence_length(model, o.seq);

  Builder b{fmt::format("{}/tp{}", model.name, o.tp), seq * o.micro_batch, o.backward, {}};
  const std::int64_t tp = o.tp;
  const std::int64_t head_dim = model.head_dim ? model.head_dim : model.hidden / model.heads;
  const std::int64_t heads = split(model, "heads", model.heads, tp, "--tp");

  if (model.mla) {
    for (const auto& p : mla_projections(model, tp)) b.linear(p.role, p.in, p.out);
  } else {
    const std::int64_t kv = model.kv_heads ? model.kv_heads : model.heads;
    // Megatron-LM replicates KV heads when there are fewer than TP ranks (each rank holds one).
    std::int64_t kv_per_rank = 1;
    if (kv >= tp)
      kv_per_rank = split(model, "kv_heads", kv, tp, "--tp");
    else if (tp % kv != 0)
      throw input_error(fmt::format("{}: --tp {} is not a multiple of kv_heads {}", model.name, tp, kv));
    b.linear("qkv", model.hidden, (heads + 2 * kv_per_rank) * head_dim);
    b.linear("attn_out", heads * head_dim, model.hidden);
  }

  const std::int64_t up_factor = model.activation == Activation::swiglu ? 2 : 1;  // SwiGLU: up and gate fused
  if (model.dense_layer_count() > 0) {
    const std::int64_t ffn = split(model, "ffn", model.ffn, tp, "--tp");
    b.linear("mlp_up", model.hidden, up_factor * ffn);
    b.linear("mlp_down", ffn, model.hidden);
  }
  if (model.moe) {
    const auto& moe = *model.moe;
    const std::int64_t local_experts = split(model, "experts", moe.experts, o.ep, "--ep");
    // Experts are whole on each rank (expert TP = 1) and each TP rank routes its own slice of the tokens,
    // as the train step runs them (workloads/parallel_layout.cpp moe_and_output_gemms).
    const std::int64_t expert_ffn = moe.expert_ffn ? moe.expert_ffn : model.ffn;
    const std::int64_t routed = (b.tokens + tp - 1) / tp;
    // Balanced routing: every expert receives its share of the EP group's routed tokens (rounded up).
    const std::int64_t per_expert = (routed * o.ep * moe.top_k + moe.experts - 1) / moe.experts;
    b.linear("router", model.hidden, moe.experts, routed);
    b.linear("expert_up", model.hidden, up_factor * expert_ffn, per_expert, local_experts);
    b.linear("expert_down", expert_ffn, model.hidden, per_expert, local_experts);
    if (moe.shared_ffn > 0) {
      const std::int64_t shared = split(model, "shared_ffn", moe.shared_ffn, tp, "--tp");
      b.linear("shared_up", model.hidden, up_factor * shared);
      b.linear("shared_down", shared, model.hidden);
    }
  }
  return std::move(b.out);
}

}  // namespace fb::workloads
