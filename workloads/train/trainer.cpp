#include "workloads/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "workloads/train/mla_attention.hpp"
#include "workloads/train/residual_norm.hpp"

namespace fb::workloads::train {
namespace {

std::unique_ptr<AttentionCore> make_core(StepContext& c, kernels::FusedAttention* fused) {
  return fused ? make_fused_attention(c, *fused) : make_blocked_attention(c);
}

}  // namespace

Trainer::Trainer(const TrainOptions& o, const TrainPlan& plan, MpiContext& mpi, Backend& backend,
                 Communicator& control, kernels::FusedAttention* fused)
    : c_(o, plan, mpi, backend),
      mpi_(mpi),
      control_(control),
      first_stage_(c_.coords.p == 0),
      last_stage_(c_.coords.p == o.parallel.pp - 1),
      first_layer_(stage_layers(plan.model, o.parallel, c_.coords.p).first),
      w_(make_model_weights(c_, first_layer_, first_stage_, last_stage_)),
      state_(c_, w_),
      pipeline_(c_),
      embedding_(first_stage_ ? std::make_unique<EmbeddingLayer>(c_, w_.dense, w_.embedding) : nullptr),
      attention_(c_, w_.dense,
                 plan.model.mla ? make_mla_projection(c_, w_.dense) : make_gqa_projection(c_, w_.dense),
                 make_core(c_, fused)),
      mlp_(c_, w_.dense),
      moe_(plan.model.moe ? std::make_unique<MoeLayer>(c_, w_) : nullptr),
      grads_(c_, w_),
      optimizer_(c_, w_),
      recompute_full_(plan.shape.recompute == Recompute::full) {
  allocate_activations();
}

// One set per micro-batch in flight (1F1B: min(P − stage, grad_accum); 1 without pipelining), and the
// workspace sized for the widest activation. --recompute full keeps only each layer's input per micro-batch
// (Korthikanti et al. 2022: 2·s·b·h bytes per layer in 16-bit) and one full set per layer kind.
void Trainer::allocate_activations() {
  const auto& l = c_.l;
  const std::int64_t T = l.tokens, h = c_.m.hidden, up = c_.swiglu() ? 2 : 1;
  acts_.resize(static_cast<std::size_t>(pipeline_.slots()));
  for (auto& slot_acts : acts_) {
    slot_acts.resize(w_.layers.size());
    for (std::size_t i = 0; i < w_.layers.size(); ++i) {
      if (recompute_full_) {
        slot_acts[i].x_in = c_.act(c_.rows * h);
        continue;
      }
      attention_.allocate(slot_acts[i], w_.layers[i]);
      feed_forward(w_.layers[i]).allocate(slot_acts[i], w_.layers[i]);
    }
  }
  if (recompute_full_) {
    for (const auto& w : w_.layers) {
      auto& r = scratch_[w.moe ? 1 : 0];
      if (r.xn_in.data()) continue;
      attention_.allocate(r, w);
      feed_forward(w).allocate(r, w);
      r.x_in = DeviceBuffer{};  // borrowed from the layer that runs
    }
    discard_ = c_.act(c_.rows * h);
  }
  x_out_ = c_.act(c_.rows * h);
  if (last_stage_) {
    xn_out_ = c_.act(T * h);
    rstd_out_ = c_.alloc(c_.rows, 4);
    logits_ = c_.act(T * l.vocab);
  }
  const std::int64_t widest = std::max({h, l.qkv_width, l.heads * l.head_dim, l.heads * l.v_head_dim,
                                        l.mla_latent, up * std::max(l.ffn, l.shared_ffn), l.vocab});
  c_.ws.tmp = c_.act(T * std::max(h, l.heads * l.head_dim));
  c_.ws.g_a = c_.act(T * widest);
  c_.ws.g_b = c_.act(T * widest);
  c_.ws.g_c = c_.act(T * widest);
}

std::vector<LayerActs>& Trainer::slot(std::int64_t micro_batch) {
  return acts_[static_cast<std::size_t>(micro_batch % static_cast<std::int64_t>(acts_.size()))];
}

StepStats Trainer::step(std::int64_t step_number, bool profile) {
  c_.backend.synchronize();
  control_.barrier();  // through the communicator: the hang watchdog sees who never entered it
  c_.timer.start(profile);
  c_.k->scale(w_.dense.grad.data(), c_.dt, w_.dense.count, 0.0f);
  if (w_.experts.count) c_.k->scale(w_.experts.grad.data(), c_.dt, w_.experts.count, 0.0f);
  const double local_loss = pipeline_.run(*this);
  grads_.finish();
  const double sq = optimizer_.step(step_number);  // Σ grad² from the same pass as the update
  c_.mark(kElementwise);
  c_.backend.synchronize();
  StepStats s;
  s.seconds = c_.timer.stop();
  s.cat = c_.timer.seconds();

  // Loss and gradient norm agreed by all ranks (a NaN anywhere spreads, as it would through the gradients).
  double sums[2] = {local_loss / static_cast<double>(c_.plan.shape.grad_accum), sq};
  if (state_.take_poison()) sums[0] = sums[1] = std::numeric_limits<double>::quiet_NaN();
  s.local_finite = std::isfinite(sums[0]) && std::isfinite(sums[1]);
  control_.allreduce(sums, sums, 2, DType::fp64, ReduceOp::sum);
  s.loss = sums[0] / static_cast<double>(mpi_.size() / c_.o.parallel.pp);  // the last stage's ranks
  // The backward pass is seeded with 2/T · logits, V times the gradient of the reported mean over T · V
  // logits (V: every TP rank's columns): a static loss scale that keeps the gradients clear of fp16/bf16
  // underflow, and that Adam does not see (its update is scale-free but for ε). The norm is reported
  // unscaled, that of the gradient of the loss reported, as Megatron-LM unscales before it reports.
  s.grad_norm =
      std::sqrt(sums[1]) / (static_cast<double>(c_.l.vocab) * static_cast<double>(c_.o.parallel.tp));
  return s;
}

CollectiveTally Trainer::take_collectives() {
  return std::exchange(c_.collectives, {});
}

NormTarget Trainer::after_layer(std::vector<LayerActs>& acts, std::size_t i) {
  if (i + 1 < w_.layers.size())
    return norm_target(c_, w_.dense, w_.layers[i + 1].attn_norm, acts[i + 1].xn_in.data(),
                       acts[i + 1].rstd_in.as<float>());
  if (last_stage_) return norm_target(c_, w_.dense, w_.final_norm, xn_out_.data(), rstd_out_.as<float>());
  return {};  // the next stage normalises what it receives
}

// One micro-batch through this stage's layers; the first stage embeds its tokens, the last runs the final
// norm and the output layer and returns the loss.
double Trainer::forward(std::int64_t micro_batch) {
  auto& acts = slot(micro_batch);
  if (first_stage_) embedding_->forward(acts[0].x_in.data());
  if (recompute_full_) {
    for (std::size_t i = 0; i < w_.layers.size(); ++i) {
      const bool last = i + 1 == w_.layers.size();
      layer_from_input(acts, i, last ? x_out_.data() : acts[i + 1].x_in.data(),
                       last ? after_layer(acts, i) : NormTarget{}, false);
    }
    return last_stage_ ? output_forward() : 0.0;
  }
  norm_only(
      c_, acts[0].x_in.data(),
      norm_target(c_, w_.dense, w_.layers[0].attn_norm, acts[0].xn_in.data(), acts[0].rstd_in.as<float>()));
  for (std::size_t i = 0; i < w_.layers.size(); ++i) {
    void* out = i + 1 < w_.layers.size() ? acts[i + 1].x_in.data() : x_out_.data();
    attention_.forward(acts[i], w_.layers[i], acts[i].x_mid.data(),
                       norm_target(c_, w_.dense, w_.layers[i].mlp_norm, acts[i].xn_mid.data(),
                                   acts[i].rstd_mid.as<float>()));
    feed_forward(w_.layers[i]).forward(acts[i], w_.layers[i], out, after_layer(acts, i));
  }
  return last_stage_ ? output_forward() : 0.0;
}

// One micro-batch back through this stage's layers. g_a holds the gradient w.r.t. the stage output (the last
// stage: from the output layer; others: received from the next stage) and ends holding the gradient w.r.t.
// the stage input (this rank's rows), which the first stage scatters into the embedding's gradient.
void Trainer::backward(std::int64_t micro_batch, bool last_micro_batch) {
  auto& acts = slot(micro_batch);
  if (last_stage_) output_backward(last_micro_batch);
  for (std::size_t i = w_.layers.size(); i-- > 0;) {
    if (recompute_full_) {
      layer_from_input(acts, i, discard_.data(), NormTarget{}, true);
    } else {
      feed_forward(w_.layers[i]).backward(acts[i], w_.layers[i]);  // g_a → g_b (d x_mid)
      attention_.backward(acts[i], w_.layers[i]);                  // g_b → g_a (d x_in)
    }
    if (last_micro_batch) grads_.layer_done(static_cast<std::int64_t>(i));
  }
  if (first_stage_) {
    embedding_->backward(c_.ws.g_a.data());
    if (last_micro_batch) grads_.embedding_done();
  }
}

// The layer's own norm of its input (the fused residual-add norm of the layer before it is not kept: its
// output is a scratch set); both read the stored input, so the recomputed forward is the forward. The
// forward passes use only the scratch set, tmp and the MoE dispatch's buffers, never the gradients in g_a.
void Trainer::layer_from_input(std::vector<LayerActs>& acts, std::size_t i, void* out, const NormTarget& next,
                               bool backward) {
  const auto& w = w_.layers[i];
  auto& r = scratch_[w.moe ? 1 : 0];
  std::swap(r.x_in, acts[i].x_in);
  c_.recomputing = backward;
  norm_only(c_, r.x_in.data(), norm_target(c_, w_.dense, w.attn_norm, r.xn_in.data(), r.rstd_in.as<float>()));
  attention_.forward(r, w, r.x_mid.data(),
                     norm_target(c_, w_.dense, w.mlp_norm, r.xn_mid.data(), r.rstd_mid.as<float>()));
  feed_forward(w).forward(r, w, out, next);
  c_.recomputing = false;
  if (backward) {
    feed_forward(w).backward(r, w);  // g_a → g_b (d x_mid)
    attention_.backward(r, w);       // g_b → g_a (d x_in)
  }
  std::swap(r.x_in, acts[i].x_in);
}

// Output layer on the final norm, and the synthetic loss: mean square of this rank's logits (a
// deterministic function of weights and data); its gradient, scaled, starts the backward pass.
double Trainer::output_forward() {
  const std::int64_t T = c_.l.tokens, V = c_.l.vocab;
  c_.tp_gather(xn_out_.data(), "logits_in");
  c_.mark(kGemm);
  linear_forward(c_, w_.dense, w_.logits, xn_out_.data(), T, logits_.data());
  c_.mark(kElementwise);
  const double loss = c_.k->sum_squares(logits_.data(), c_.dt, T * V) / static_cast<double>(T * V);
  c_.k->scale(logits_.data(), c_.dt, T * V, 2.0f / static_cast<float>(T));
  return loss;
}

// d xn_out (g_c) = logits dgrad, wgrad of the output layer; d x_out (g_a) through the final norm. The output
// layer and the final norm are one gradient bucket.
void Trainer::output_backward(bool last_micro_batch) {
  const std::int64_t T = c_.l.tokens;
  c_.mark(kGemm);
  linear_dgrad(c_, w_.dense, w_.logits, logits_.data(), T, c_.ws.g_c.data());
  linear_wgrad(c_, w_.dense, w_.logits, xn_out_.data(), logits_.data(), T);
  c_.tp_reduce(c_.ws.g_c.data(), "logits_dgrad");
  norm_backward(c_, w_.dense, w_.final_norm, c_.ws.g_c.data(), x_out_.data(), rstd_out_.as<float>(), nullptr,
                c_.ws.g_a.data());
  if (last_micro_batch) grads_.layer_done(static_cast<std::int64_t>(w_.layers.size()));
}

}  // namespace fb::workloads::train
