#include "workloads/parallel_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"
#include "workloads/layer_gemm_shapes.hpp"
#include "workloads/train/optimizer_shards.hpp"

namespace fb::workloads {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

std::int64_t up_factor(const ModelConfig& m) {
  return m.activation == Activation::swiglu ? 2 : 1;
}

// Query/key block of the causal attention: the largest power of two up to 512 that divides seq and leaves at
// least two blocks (so the upper triangle is skipped), else the whole sequence.
std::int64_t attention_block(std::int64_t seq) {
  for (std::int64_t b = 512; b >= 16; b /= 2)
    if (seq % b == 0 && seq / b >= 2) return b;
  return seq;
}

}  // namespace

void validate_layout(const ModelConfig& m, const ParallelConfig& c, std::int64_t world) {
  const auto positive = [](const char* option, std::int64_t v) {
    if (v < 1) throw usage_error(fmt::format("invalid {} {}: must be at least 1", option, v));
  };
  positive("--tp", c.tp);
  positive("--dp", c.dp);
  positive("--ep", c.ep);
  positive("--pp", c.pp);
  if (c.world() != world)
    throw usage_error(
        fmt::format("--tp {} x --dp {} x --pp {} = {} ranks, but the job has {} (world size must equal "
                    "T·D·P)",
                    c.tp, c.dp, c.pp, c.world(), world));
  if (m.heads % c.tp != 0)
    throw usage_error(fmt::format("--tp {} does not divide {}'s heads ({})", c.tp, m.name, m.heads));
  if (m.kv_heads >= c.tp ? m.kv_heads % c.tp != 0 : c.tp % m.kv_heads != 0)
    throw usage_error(
        fmt::format("--tp {} and {}'s kv_heads ({}): one must divide the other", c.tp, m.name, m.kv_heads));
  if (m.ffn % c.tp != 0 && m.dense_layer_count() > 0)
    throw usage_error(fmt::format("--tp {} does not divide {}'s ffn ({})", c.tp, m.name, m.ffn));
  if (!m.moe) {
    if (c.ep != 1)
      throw usage_error(fmt::format("--ep {}: {} has no experts (dense model); use --ep 1", c.ep, m.name));
  } else {
    if (m.moe->experts % c.ep != 0)
      throw usage_error(
          fmt::format("--ep {} does not divide {}'s experts ({})", c.ep, m.name, m.moe->experts));
    if ((c.dp * c.tp) % c.ep != 0)
      throw usage_error(
          fmt::format("--ep {} does not divide --dp x --tp ({} x {} = {}): expert-parallel groups are "
                      "formed inside the data- and tensor-parallel ranks",
                      c.ep, c.dp, c.tp, c.dp * c.tp));
    if (m.moe->shared_ffn % c.tp != 0)
      throw usage_error(
          fmt::format("--tp {} does not divide {}'s moe.shared_ffn ({})", c.tp, m.name, m.moe->shared_ffn));
  }
  if (c.pp > 1 && m.layers % c.pp != 0)
    throw usage_error(fmt::format("--pp {} does not divide {}'s layers ({})", c.pp, m.name, m.layers));
}

RankCoords rank_coords(std::int64_t rank, const ParallelConfig& c) {
  RankCoords r;
  r.t = rank % c.tp;
  r.d = (rank / c.tp) % c.dp;
  r.p = rank / (c.tp * c.dp);
  const std::int64_t q = r.d * c.tp + r.t;
  r.ep_group = q / c.ep;
  r.ep_rank = q % c.ep;
  r.edp_rank = r.ep_group;
  return r;
}

StageLayers stage_layers(const ModelConfig& m, const ParallelConfig& c, std::int64_t stage) {
  const std::int64_t per_stage = m.layers / std::max<std::int64_t>(c.pp, 1);
  return {stage * per_stage, per_stage};
}

std::int64_t StageLayers::moe_layers(const ModelConfig& m) const {
  std::int64_t n = 0;
  for (std::int64_t i = first; i < first + count; ++i) n += m.is_moe_layer(i) ? 1 : 0;
  return n;
}

namespace {

// Weights of one attention block on a rank, with its pre-norm (and MLA's latent norms).
std::int64_t attention_weights(const ModelConfig& m, const ParallelConfig& c, const LocalDims& l) {
  if (!m.mla) return m.hidden * l.qkv_width + l.heads * l.head_dim * m.hidden + m.hidden;
  std::int64_t n = m.hidden + m.mla->q_lora_rank + m.mla->kv_lora_rank;
  for (const auto& p : mla_projections(m, c.tp)) n += p.in * p.out;
  return n;
}

struct StageParams {
  std::int64_t dense = 0, expert = 0;
};

// Weights of model layer i (global index) on a rank.
StageParams layer_params(const ModelConfig& m, const ParallelConfig& c, const LocalDims& l, std::int64_t i) {
  const std::int64_t h = m.hidden;
  StageParams p;
  p.dense = attention_weights(m, c, l) + h;  // + the feed-forward pre-norm
  if (m.is_moe_layer(i)) {
    p.dense += h * m.moe->experts;  // router (replicated)
    if (m.moe->shared_ffn > 0) p.dense += (up_factor(m) + 1) * h * (m.moe->shared_ffn / c.tp);
    p.expert = (m.moe->experts / c.ep) * (up_factor(m) + 1) * h * m.moe->expert_ffn;
  } else {
    p.dense += (up_factor(m) + 1) * h * l.ffn;
  }
  return p;
}

// The input embedding on the first stage, the final norm and output layer on the last (vocabulary split
// over TP for both).
std::int64_t embedding_params(const ModelConfig& m, const LocalDims& l) {
  return l.vocab * m.hidden;
}
std::int64_t output_params(const ModelConfig& m, const LocalDims& l) {
  return l.vocab * m.hidden + m.hidden;
}

StageParams stage_params(const ModelConfig& m, const ParallelConfig& c, const LocalDims& l,
                         std::int64_t stage) {
  const auto layers = stage_layers(m, c, stage);
  StageParams p;
  for (std::int64_t i = layers.first; i < layers.first + layers.count; ++i) {
    const auto one = layer_params(m, c, l, i);
    p.dense += one.dense;
    p.expert += one.expert;
  }
  if (stage == 0) p.dense += embedding_params(m, l);
  if (stage == c.pp - 1) p.dense += output_params(m, l);
  return p;
}

}  // namespace

LocalDims local_dims(const ModelConfig& m, const ParallelConfig& c, const StepShape& s) {
  LocalDims l;
  l.seq = sequence_length(m, s.seq);
  l.tokens = l.seq * s.micro_batch;
  l.moe_tokens = ceil_div(l.tokens, c.tp);
  l.sp_tokens = s.sequence_parallel ? ceil_div(l.tokens, c.tp) : l.tokens;
  l.layers = m.layers / std::max<std::int64_t>(c.pp, 1);
  l.heads = m.heads / c.tp;
  if (m.mla) {
    // Every head has its own key and value (no grouping); K = [k_nope, the shared rope half].
    const auto& a = *m.mla;
    l.kv_heads = l.heads;
    l.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    l.v_head_dim = a.v_head_dim;
    l.qkv_width = l.heads * (2 * l.head_dim + a.v_head_dim + a.qk_nope_head_dim);
    l.mla_latent = a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim;
  } else {
    l.kv_heads = m.kv_heads >= c.tp ? m.kv_heads / c.tp : 1;
    l.kv_copies = m.kv_heads >= c.tp || m.kv_heads < 1 ? 1 : c.tp / m.kv_heads;
    l.head_dim = m.head_dim;
    l.v_head_dim = m.head_dim;
    l.qkv_width = (l.heads + 2 * l.kv_heads) * l.head_dim;
  }
  l.ffn = m.ffn / c.tp;
  l.vocab = ceil_div(m.vocab, c.tp);
  l.attn_block = attention_block(l.seq);
  if (m.moe) {
    l.shared_ffn = m.moe->shared_ffn / c.tp;
    l.expert_ffn = m.moe->expert_ffn;
    l.local_experts = m.moe->experts / c.ep;
  }
  for (std::int64_t p = 0; p < std::max<std::int64_t>(c.pp, 1); ++p) {
    const auto sp = stage_params(m, c, l, p);
    if (sp.dense + sp.expert > l.dense_params + l.expert_params) {
      l.dense_params = sp.dense;
      l.expert_params = sp.expert;
    }
  }
  return l;
}

GradientBuckets gradient_buckets(const ModelConfig& m, const ParallelConfig& c, const StepShape& s,
                                 std::int64_t stage) {
  const auto l = local_dims(m, c, s);
  const auto layers = stage_layers(m, c, stage);
  const int dense_shards = s.distributed_optimizer ? static_cast<int>(c.dp) : 1;
  const int expert_shards = s.distributed_optimizer ? static_cast<int>(c.expert_dp()) : 1;
  GradientBuckets b;
  const auto add = [](std::vector<GradientBucket>& to, std::int64_t count, int shards, std::string holds) {
    if (count > 0) to.push_back({train::padded_bucket_end(0, count, shards), std::move(holds)});
  };
  if (stage == c.pp - 1) add(b.dense, output_params(m, l), dense_shards, "output layer and final norm");
  const std::int64_t k = std::max<std::int64_t>(s.bucket_layers, 1);
  // Local layer j opens a bucket when j % k == 0; backward completes the last one first.
  for (std::int64_t open = layers.count > 0 ? (layers.count - 1) / k * k : -1; open >= 0; open -= k) {
    StageParams p;
    const std::int64_t n = std::min(k, layers.count - open);
    std::int64_t moe = 0;
    for (std::int64_t j = open; j < open + n; ++j) {
      const auto one = layer_params(m, c, l, layers.first + j);
      p.dense += one.dense;
      p.expert += one.expert;
      moe += one.expert > 0 ? 1 : 0;
    }
    const auto count = [](std::int64_t k_layers, const char* kind = "") {
      return fmt::format("{} {}layer{}", k_layers, kind, k_layers == 1 ? "" : "s");
    };
    // In an MoE model a layer's dense part depends on its kind: say which the bucket holds.
    const std::string kinds = !m.moe     ? count(n)
                              : moe == n ? count(n, "MoE ")
                              : moe == 0 ? count(n, "dense ")
                                         : fmt::format("{}, {} MoE", count(n), moe);
    add(b.dense, p.dense, dense_shards, kinds);
    add(b.expert, p.expert, expert_shards, "experts of " + count(moe));
  }
  if (stage == 0) add(b.dense, embedding_params(m, l), dense_shards, "input embedding");
  return b;
}

MemoryEstimate estimate_memory(const ModelConfig& m, const ParallelConfig& c, const StepShape& s) {
  const auto l = local_dims(m, c, s);
  // Counted in doubles (exact to 8 PiB): the bounds on each size keep the plan's own integers from wrapping,
  // but not their products here (llama3.1-405b at --seq 16M --micro-batch 4 in fp32 wrapped 64 bits and
  // planned 15.5 EiB for what needs 31). Past kMaxEstimate the step is refused below.
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double e = d(static_cast<std::int64_t>(dtype_bytes(s.dtype)));
  const std::int64_t stages = std::max<std::int64_t>(c.pp, 1);
  // Saved activations per layer and micro-batch (what the step keeps for backward), bytes: the residual
  // stream (x_in, x_mid: this rank's rows, 1/tp of them with sequence parallelism, as Megatron-LM keeps
  // them: Korthikanti et al. 2022, "sequence parallelism") and its two norms (xn_in, xn_mid: all-gathered,
  // every row, for the projections' weight gradients; 1/rms in fp32), QKV, the attention core's saved state
  // (probabilities of the lower-triangular blocks, or a fused engine's fp32 log-sum-exp), the context, MLA
  // latents and their norms, the MLP/MoE intermediates with routed capacity 2× balanced.
  const double T = d(l.tokens), h = d(m.hidden), R = d(l.sp_tokens);  // R: residual-stream rows
  const double nb = d(l.seq / l.attn_block), block = d(l.attn_block);
  const double probs = d(l.heads) * d(s.micro_batch) * block * block * nb * (nb + 1) / 2;
  const double core_kept = s.fused_attention ? d(l.heads) * T * 4 : probs * e;
  // Selective recomputation: the blocked path's probabilities are recomputed in backward, one buffer for
  // the stage (a fused engine's statistics are still saved per layer).
  const bool shared_probs = s.recompute == Recompute::selective && !s.fused_attention;
  const double core_saved = shared_probs ? 0 : core_kept;
  const double up = d(up_factor(m) + 1);
  const auto layer_acts = [&](std::int64_t i) {
    double a =
        (2 * R + 2 * T) * h + T * d(l.qkv_width) + T * d(l.heads * l.v_head_dim) + 2 * T * d(l.mla_latent);
    if (m.is_moe_layer(i)) {
      const double routed = 2 * d(l.moe_tokens) * d(m.moe->top_k);  // capacity: twice balanced
      a += routed * h * 3 + routed * up * d(l.expert_ffn) + d(l.moe_tokens) * d(m.moe->experts);
      a += T * up * d(l.shared_ffn) + T * h;
    } else {
      a += T * up * d(l.ffn);
    }
    const double fp32_rows = (2 * d(l.sp_tokens) + (m.mla ? 2 * T : 0)) * 4;
    return a * e + core_saved + fp32_rows;
  };
  // Transient gradient buffers: a few token-by-width buffers, MLA's latent gradients and, for the blocked
  // attention, one probability strip.
  const double widest = d(std::max({m.hidden, l.qkv_width, l.heads * l.v_head_dim, l.mla_latent,
                                    (up_factor(m) + 1) * std::max(l.ffn, l.shared_ffn), l.vocab}));
  double largest_total = -1;
  std::array<double, 5> largest{};  // weights, gradients, optimizer, activations, workspace
  for (std::int64_t p = 0; p < stages; ++p) {
    const auto sp = stage_params(m, c, l, p);
    const double params = d(sp.dense) + d(sp.expert);
    // fp32 master weights + two Adam moments; ZeRO-1 shards them over DP (experts over expert-DP).
    const double optimizer =
        s.distributed_optimizer ? 12 * (d(sp.dense / c.dp) + d(sp.expert / c.expert_dp())) : 12 * params;
    const auto layers = stage_layers(m, c, p);
    double acts = 0;
    // Full recomputation keeps each layer's input (Korthikanti et al. 2022, Table 2: 2·s·b·h·L bytes in
    // 16-bit; /tp with sequence parallelism), plus one layer's full set per layer kind on the stage and the
    // recomputed output.
    double scratch[2] = {0, 0};
    for (std::int64_t i = layers.first; i < layers.first + layers.count; ++i) {
      if (s.recompute != Recompute::full) {
        acts += layer_acts(i);
        continue;
      }
      acts += R * h * e;
      scratch[m.is_moe_layer(i) ? 1 : 0] = layer_acts(i) - R * h * e;
    }
    acts *= d(std::min(stages - p, s.grad_accum));  // 1F1B in-flight micro-batches
    acts += R * h * e;                              // stage output
    if (s.recompute == Recompute::full) acts += scratch[0] + scratch[1] + R * h * e;
    if (shared_probs) acts += core_kept;
    if (p == stages - 1) acts += T * (h + d(l.vocab)) * e;  // final norm, logits
    const double strip =
        s.fused_attention ? 0 : std::floor(probs / d(std::max<std::int64_t>(layers.count, 1)));
    const double workspace =
        (4 * T * widest + 3 * T * d(l.mla_latent) + strip) * e + d(std::int64_t{32} << 20);
    const std::array<double, 5> est{params * e, params * e, optimizer, acts, workspace};
    const double total = est[0] + est[1] + est[2] + est[3] + est[4];
    if (total > largest_total) largest_total = total, largest = est;
  }
  // 2^63 bytes (8 EiB) per rank is beyond any machine by a factor of a million; below it the parts and their
  // sum fit the report's unsigned 64-bit counts.
  constexpr double kMaxEstimate = 9223372036854775808.0;
  if (largest_total > kMaxEstimate)
    throw usage_error(fmt::format(
        "{} at --seq {} x --micro-batch {} in {} needs about {:.3g} EiB per rank (activations {:.3g} EiB): "
        "more than 8 EiB, beyond any machine; use a shorter --seq, a smaller --micro-batch or more --tp/--pp",
        m.name, l.seq, s.micro_batch, to_string(s.dtype), largest_total / 1152921504606846976.0,
        largest[3] / 1152921504606846976.0));
  const auto bytes = [](double v) { return static_cast<std::uint64_t>(std::round(v)); };
  return {bytes(largest[0]), bytes(largest[1]), bytes(largest[2]), bytes(largest[3]), bytes(largest[4])};
}

void check_fits(const MemoryEstimate& est, std::uint64_t available, const ModelConfig& m,
                const ParallelConfig& c, const StepShape& s) {
  if (est.total() <= available) return;
  // The distributed optimizer shards over DP (experts over expert-DP, dp x tp / ep): with nothing to shard
  // over it is refused, and once on it is no further help.
  const bool can_shard = c.dp > 1 || (m.is_moe() && c.expert_dp() > 1);
  const std::string sharding = s.distributed_optimizer ? ""
                               : can_shard             ? ", or --distributed-optimizer"
                                                       : ", or --dp N with --distributed-optimizer";
  // TP does not split the experts; expert parallelism does.
  const std::string experts =
      m.is_moe() && c.ep < m.moe->experts
          ? fmt::format(", a larger --ep (now {}: TP does not split the experts)", c.ep)
          : "";
  // Only what can help: fewer layers or more stages need layers to spare (the embedding and the output layer
  // stay, and with a large vocabulary they alone can be too much: then TP, which splits the vocabulary,
  // does). A shorter sequence or micro-batch shrinks the activations only: where the weights, gradients and
  // optimizer state alone are too much, the message says so and names the levers that shrink the state.
  std::string hints;
  if (m.layers > 1) hints += fmt::format("--layers N (fewer layers; now {}), ", m.layers);
  hints += fmt::format("a larger --tp (now {}){}{}", c.tp, m.layers > c.pp ? " or --pp" : "", experts);
  const std::uint64_t state = est.weights + est.gradients + est.optimizer;
  if (state < available) hints += fmt::format(", a smaller --micro-batch (now {}) or --seq", s.micro_batch);
  const std::string state_note =
      state < available
          ? ""
          : fmt::format(" (the weights, gradients and optimizer state alone need {})", format_bytes(state));
  throw usage_error(fmt::format(
      "{} does not fit: each rank needs about {} (weights {}, gradients {}, optimizer {}, activations {}, "
      "workspace {}) but has {}{}; try {}{}",
      m.name, format_bytes(est.total()), format_bytes(est.weights), format_bytes(est.gradients),
      format_bytes(est.optimizer), format_bytes(est.activations), format_bytes(est.workspace),
      format_bytes(available), state_note, hints, sharding));
}

namespace {

// Fills a plan's GEMM and collective lists for one rank of the last pipeline stage (it also runs the output
// layer).
struct PlanLists {
  PlanLists(const ModelConfig& model, const ParallelConfig& parallel, const StepShape& shape, TrainPlan& plan)
      : m(model), c(parallel), s(shape), l(plan.local), gemms(plan.gemms), collectives(plan.collectives) {
    const auto stage = stage_layers(m, c, c.pp - 1);
    layers_here = stage.count;
    moe_layers = stage.moe_layers(m);
    dense_layers = layers_here - moe_layers;
    prefix = fmt::format("{}/tp{}", m.name, c.tp);
  }

  const ModelConfig& m;
  const ParallelConfig& c;
  const StepShape& s;
  const LocalDims& l;
  std::vector<PlanGemm>& gemms;
  std::vector<PlanCollective>& collectives;
  std::int64_t layers_here = 0, moe_layers = 0, dense_layers = 0;
  std::string prefix;

  // One pass of a GEMM in the step's dtype, named under "<model>/tp<T>".
  void add(const std::string& role, const char* pass, std::int64_t mm, std::int64_t n, std::int64_t k,
           bool ta, bool tb, std::int64_t batch, std::int64_t calls, std::int64_t layers, std::string note) {
    LayerGemm g = make_layer_gemm(prefix, role, pass, mm, n, k, ta, tb, batch);
    g.problem.dtype = s.dtype;
    gemms.push_back({std::move(g), calls, layers, std::move(note)});
  }
  // A token-major linear layer (`rows` tokens, `in` -> `out` features): its forward and two backward passes.
  void linear(const std::string& role, std::int64_t in, std::int64_t out, std::int64_t rows,
              std::int64_t batch, std::int64_t layers, const std::string& note) {
    add(role, "fwd", out, rows, in, true, false, batch, 1, layers, note);
    add(role, "dgrad", in, rows, out, false, false, batch, 1, layers, note);
    add(role, "wgrad", in, out, rows, false, true, batch, 1, layers, note);
  }

  void table_gemms();
  void attention_projections();
  void attention_core();
  void moe_and_output_gemms();
  void tp_collectives();
  void pp_and_ep_collectives();
  void gradient_collectives();
};

// Dense MLP and shared experts from the GEMM engineer's shape table; the attention projections (run
// feature-major), routed experts and the router (this step's expert layout, see header) are listed apart.
void PlanLists::table_gemms() {
  LayerShapeOptions o;
  o.tp = c.tp;
  o.ep = c.ep;
  o.seq = l.seq;
  o.micro_batch = s.micro_batch;
  for (auto& g : layer_gemm_shapes(m, o)) {
    if (g.role != "mlp_up" && g.role != "mlp_down" && g.role.rfind("shared_", 0) != 0) continue;
    g.problem.dtype = s.dtype;
    std::int64_t layers = layers_here;
    if (g.role == "mlp_up" || g.role == "mlp_down") layers = dense_layers;
    if (g.role.rfind("shared_", 0) == 0) layers = moe_layers;
    if (layers == 0) continue;
    gemms.push_back({std::move(g), 1, layers, ""});
  }
}

// The attention projections, token-major like every linear layer of the step: from the layer input's norm
// (qkv; MLA q_down, q, kv_down) and from the MLA latent's norms (q_up, kv_up: inputs are column blocks of
// the latent rows, outputs column blocks of the qkv rows).
void PlanLists::attention_projections() {
  const std::int64_t T = l.tokens;
  if (m.mla) {
    for (const auto& p : mla_projections(m, c.tp)) {
      const bool latent = p.role == "q_up" || p.role == "kv_up";
      linear(p.role, p.in, p.out, T, 1, layers_here, latent ? "reads a column block of the latent rows" : "");
    }
  } else {
    linear("qkv", m.hidden, l.qkv_width, T, 1, layers_here, "");
    linear("attn_out", l.heads * l.head_dim, m.hidden, T, 1, layers_here, "");
  }
}

// Causal attention core: per query block i (of nb), scores over keys [0, (i+1)·B) and context; batched over
// the kv groups, one call per query head of a group. Listed at the largest strip (i = nb − 1).
void PlanLists::attention_core() {
  if (s.fused_attention) return;  // one fused kernel per direction, no GEMMs of ours
  const std::int64_t B = l.attn_block, nb = l.seq / B, keys = l.seq;
  const std::int64_t groups = l.kv_heads, hpg = l.heads / l.kv_heads;
  const std::int64_t calls = hpg * nb * s.micro_batch;
  const std::int64_t dq = l.head_dim, dv = l.v_head_dim;
  const std::string strip =
      fmt::format("block {}: {} query blocks, strip i uses m or k = (i+1)·{}", B, nb, B);
  add("attn_scores", "fwd", keys, B, dq, true, false, groups, calls, layers_here, strip);
  add("attn_context", "fwd", dv, B, keys, false, false, groups, calls, layers_here, strip);
  add("attn_context", "dgrad_probs", keys, B, dv, true, false, groups, calls, layers_here, strip);
  add("attn_context", "wgrad_v", dv, keys, B, false, true, groups, calls, layers_here, strip);
  add("attn_scores", "dgrad_q", dq, B, keys, false, false, groups, calls, layers_here, strip);
  add("attn_scores", "dgrad_k", dq, keys, B, false, true, groups, calls, layers_here, strip);
}

// The router and routed experts of the MoE layers, then the output layer.
void PlanLists::moe_and_output_gemms() {
  if (m.moe && moe_layers > 0) {
    const std::int64_t per_expert = ceil_div(l.moe_tokens * c.ep * m.moe->top_k, m.moe->experts);
    linear("router", m.hidden, m.moe->experts, l.moe_tokens, 1, moe_layers,
           "replicated, on this rank's token slice");
    const std::string note =
        fmt::format("grouped over {} local experts; rows = tokens routed to each ({} balanced)",
                    l.local_experts, per_expert);
    linear("expert_up", m.hidden, up_factor(m) * l.expert_ffn, per_expert, l.local_experts, moe_layers, note);
    linear("expert_down", l.expert_ffn, m.hidden, per_expert, l.local_experts, moe_layers, note);
  }
  linear("logits", m.hidden, l.vocab, l.tokens, 1, 1,
         c.pp > 1 ? "output layer, vocab split over TP; last pipeline stage"
                  : "output layer, vocab split over TP");
}

// Collectives per step (per rank, bytes of the buffer each call passes): tensor parallelism.
void PlanLists::tp_collectives() {
  if (c.tp <= 1) return;
  const double e = static_cast<double>(dtype_bytes(s.dtype));
  const double mbs = static_cast<double>(s.grad_accum);  // micro-batches per step
  const double act = static_cast<double>(l.tokens * m.hidden) * e;
  // Per layer: the attention and MLP outputs forward, the MLP's and the attention's input gradients
  // backward (MLA: the attention input gradient is exact on every rank once the latent gradient is
  // all-reduced, unless the query is projected from the hidden state directly: q_lora_rank 0); one more for
  // the output layer's input gradient.
  const double per_layer = m.mla && m.mla->q_lora_rank > 0 ? 3.0 : 4.0;
  // Full recomputation runs each layer's forward again, its two output reductions (and, with sequence
  // parallelism, its two input all-gathers) included.
  const double again = s.recompute == Recompute::full ? 2.0 * layers_here * mbs : 0.0;
  const double reductions = (per_layer * layers_here + 1) * mbs + again;
  // The embedding (first stage; listed when it is also the last, pp = 1): the vocabulary-parallel lookup's
  // partial rows summed forward; with sequence parallelism its gradient all-gathered backward.
  const bool embedding = c.pp == 1;
  // One entry per kind of call; the run counts each call site under its own name (the step's tally,
  // extra.collective_calls_per_step): the notes name the sites whose calls add up to the entry.
  const std::string sums_note =
      "call sites (those this rank has): attn_out, mlp_out or moe_out forward; qkv_dgrad (MLA: q_dgrad "
      "where q_lora_rank is 0), mlp_dgrad or moe_dgrad, and the output layer's logits_dgrad, backward";
  if (s.sequence_parallel) {
    // Megatron-LM sequence parallelism: all-gather of the sequence-split rows before QKV and the MLP (and
    // before the output layer), of the output gradients before their backward; reduce-scatter where the
    // all-reduce was.
    collectives.push_back({"tp_allgather/layer_in", "tp", "allgather", c.tp, act / c.tp,
                           (4.0 * layers_here + 1) * mbs + again,
                           "call sites (those this rank has): attn_in, mlp_in and the output layer's "
                           "logits_in forward; attn_out_grad and layer_out_grad backward"});
    collectives.push_back(
        {"tp_reduce_scatter/layer_out", "tp", "reduce_scatter", c.tp, act, reductions, sums_note});
    if (embedding) {
      collectives.push_back({"tp_reduce_scatter/embedding", "tp", "reduce_scatter", c.tp, act, mbs});
      collectives.push_back({"tp_allgather/embedding_grad", "tp", "allgather", c.tp, act / c.tp, mbs});
    }
  } else {
    collectives.push_back({"tp_allreduce/layer_out", "tp", "allreduce", c.tp, act, reductions, sums_note});
    if (embedding) collectives.push_back({"tp_allreduce/embedding", "tp", "allreduce", c.tp, act, mbs});
  }
  if (m.mla)
    collectives.push_back({"tp_allreduce/mla_latent_grad", "tp", "allreduce", c.tp,
                           static_cast<double>(l.tokens * l.mla_latent) * e, layers_here * mbs});
  // Once per step and layer, with fewer kv heads than TP ranks: the K and V columns of the kv head that
  // kv_copies ranks hold, whose gradients each computed from its own query heads.
  if (l.kv_copies > 1)
    collectives.push_back({"tp_allreduce/kv_head_grads", "tp", "allreduce", l.kv_copies,
                           static_cast<double>(2 * l.head_dim * m.hidden) * e,
                           static_cast<double>(layers_here)});
  // Once per step, tensors every TP rank holds whole but computes from part of the tokens: each MoE layer's
  // router (each TP rank routes its own token slice) and, with sequence parallelism, every norm gain (two
  // per layer and the final norm), one all-reduce per tensor.
  const double routers = static_cast<double>(moe_layers),
               norms = s.sequence_parallel ? 2.0 * layers_here + 1 : 0;
  const double bytes = (routers * static_cast<double>(m.hidden * (m.moe ? m.moe->experts : 0)) +
                        norms * static_cast<double>(m.hidden)) *
                       e;
  if (routers + norms > 0)
    collectives.push_back({"tp_allreduce/replicated_grads", "tp", "allreduce", c.tp,
                           bytes / (routers + norms), routers + norms});
}

// Per micro-batch: pipeline neighbours' point-to-point and the experts' all-to-all.
void PlanLists::pp_and_ep_collectives() {
  const double e = static_cast<double>(dtype_bytes(s.dtype));
  const double mbs = static_cast<double>(s.grad_accum);  // micro-batches per step
  if (c.pp > 1) {
    // Point-to-point with the neighbouring stage, per micro-batch: activations in, gradients out (the
    // rows this rank holds: 1/T of them with sequence parallelism). Middle stages do both twice.
    const double p2p = static_cast<double>(l.sp_tokens * m.hidden) * e;
    collectives.push_back({"pp_p2p/activations", "pp", "send_recv", 2, p2p, mbs});
    collectives.push_back({"pp_p2p/grads", "pp", "send_recv", 2, p2p, mbs});
  }
  if (m.moe && moe_layers > 0 && c.ep > 1) {
    const double routed = static_cast<double>(l.moe_tokens * m.moe->top_k * m.hidden) * e;
    // Forward and backward; full recomputation dispatches and combines once more in backward.
    const double passes = s.recompute == Recompute::full ? 3.0 : 2.0;
    // Each entry is one direction; the run counts the backward's under its own name (as the notes say).
    collectives.push_back({"ep_alltoallv/dispatch", "ep", "alltoallv", c.ep, routed,
                           passes * moe_layers * mbs,
                           "tokens to their experts; call sites: dispatch forward (and in recomputation), "
                           "combine_grad backward"});
    collectives.push_back({"ep_alltoallv/combine", "ep", "alltoallv", c.ep, routed, passes * moe_layers * mbs,
                           "experts' rows back to their tokens; call sites: combine forward (and in "
                           "recomputation), dispatch_grad backward"});
    // Before each dispatch (forward, and full recomputation's forward again): every rank's row count per
    // expert, int32, so that each peer sizes what it receives.
    collectives.push_back({"ep_alltoall/counts", "ep", "alltoall", c.ep,
                           static_cast<double>(m.moe->experts * 4), (passes - 1) * moe_layers * mbs});
  }
}

// Once per step, one call per gradient bucket: the dense gradients over DP, the expert gradients over
// expert-DP; with a distributed optimizer each bucket is reduce-scattered and its updated weights
// all-gathered (each rank sends its 1/n). Buckets of one size share an entry, listed in the order backward
// reaches them.
void PlanLists::gradient_collectives() {
  const double e = static_cast<double>(dtype_bytes(s.dtype));
  // The last stage's buckets, as every list of the plan is the last stage's (LocalDims holds the largest
  // stage's, for memory): with PP the stages differ, and the last may hold no expert at all.
  const auto buckets = gradient_buckets(m, c, s, std::max<std::int64_t>(c.pp, 1) - 1);
  const auto list = [&](const std::vector<GradientBucket>& of, const char* group, std::int64_t n,
                        const char* what, const char* params) {
    if (n <= 1) return;
    std::vector<std::pair<const GradientBucket*, double>> kinds;  // a bucket of each size and kind, calls
    for (const auto& b : of) {
      const auto same = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) {
        return k.first->elements == b.elements && k.first->holds == b.holds;
      });
      if (same == kinds.end())
        kinds.emplace_back(&b, 1.0);
      else
        same->second += 1;
    }
    const std::string g = group;
    for (const auto& [b, calls] : kinds) {
      const double bytes = static_cast<double>(b->elements) * e;
      if (s.distributed_optimizer) {
        collectives.push_back(
            {g + "_reduce_scatter/" + what, g, "reduce_scatter", n, bytes, calls, b->holds});
        collectives.push_back(
            {g + "_allgather/" + params, g, "allgather", n, bytes / static_cast<double>(n), calls, b->holds});
      } else {
        collectives.push_back({g + "_allreduce/" + what, g, "allreduce", n, bytes, calls, b->holds});
      }
    }
  };
  list(buckets.dense, "dp", c.dp, "grads", "params");
  list(buckets.expert, "edp", c.expert_dp(), "expert_grads", "expert_params");
}

}  // namespace

TrainPlan make_plan(const ModelConfig& m, const ParallelConfig& c, const StepShape& s) {
  TrainPlan plan;
  plan.model = m;
  plan.parallel = c;
  plan.shape = s;
  plan.local = local_dims(m, c, s);
  const auto& l = plan.local;
  // Parameters and FLOPs of the model as the step holds it: a vocabulary TP does not divide is padded to
  // tp·⌈vocab/tp⌉ rows, which Megatron-LM counts too (num_floating_point_operations takes padded_vocab_size).
  ModelConfig padded = m;
  padded.vocab = l.vocab * c.tp;
  plan.params = parameter_counts(padded);
  plan.flops = model_flops_per_token(padded, l.seq, s.attention);
  plan.hardware_flops_per_token = hardware_flops_per_token(plan.flops, s.recompute);
  plan.tokens_per_step = static_cast<double>(l.tokens * s.grad_accum * c.dp);
  plan.flops_per_step = plan.flops.total() * plan.tokens_per_step;
  plan.memory = estimate_memory(m, c, s);

  PlanLists lists(m, c, s, plan);
  lists.table_gemms();
  lists.attention_projections();
  lists.attention_core();
  lists.moe_and_output_gemms();
  lists.tp_collectives();
  lists.pp_and_ep_collectives();
  lists.gradient_collectives();
  return plan;
}

}  // namespace fb::workloads
