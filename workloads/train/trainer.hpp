#pragma once
// One rank's training step: the model shard of its pipeline stage (attention and feed-forward sublayers
// over saved activations), the 1F1B schedule, data-parallel gradient reduction and the optimizer, composed
// from the units in workloads/train/. run_training (workloads/train_step.cpp) drives it step by step.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention_engine.hpp"
#include "workloads/train/attention_layer.hpp"
#include "workloads/train/embedding_layer.hpp"
#include "workloads/train/gradient_reduction.hpp"
#include "workloads/train/mlp_layer.hpp"
#include "workloads/train/model_state.hpp"
#include "workloads/train/moe_layer.hpp"
#include "workloads/train/optimizer.hpp"
#include "workloads/train/pipeline_runner.hpp"

namespace fb::workloads::train {

struct StepStats {
  double seconds = 0, loss = 0, grad_norm = 0;
  bool local_finite = true;  // this rank's loss and gradient before the all-reduce (NaN origin)
  CatSeconds cat{};
};

class Trainer final : public PipelineStage {
 public:
  // Collective over the world: builds the communicators. `control` is a host-memory world communicator.
  // `fused` runs the attention core when given (it outlives the trainer); else the blocked GEMM path.
  Trainer(const TrainOptions& o, const TrainPlan& plan, MpiContext& mpi, Backend& backend,
          Communicator& control, kernels::FusedAttention* fused);

  // One training step (1-based number); `profile` synchronises at every breakdown category change.
  StepStats step(std::int64_t step_number, bool profile);

  TrainStateAccess& state() { return state_; }
  std::uint64_t allocated() const { return c_.allocated; }
  std::string engine_name() const { return c_.gemm_engine->name(); }
  bool emulated() const { return c_.gemm_engine->emulated(); }
  std::int64_t sent_rows() const { return moe_ ? moe_->dispatch().sent_rows() : 0; }
  std::int64_t received_rows() const { return moe_ ? moe_->dispatch().received_rows() : 0; }
  std::vector<double> expert_tokens() const {
    return moe_ ? moe_->dispatch().expert_tokens() : std::vector<double>{};
  }
  // Collective calls and bytes since the last call, by name.
  CollectiveTally take_collectives();

  // --- PipelineStage
  double forward(std::int64_t micro_batch) override;
  void backward(std::int64_t micro_batch, bool last_micro_batch) override;
  void* input(std::int64_t micro_batch) override { return slot(micro_batch)[0].x_in.data(); }
  void* output() override { return x_out_.data(); }
  void* grad() override { return c_.my_rows(c_.ws.g_a); }

 private:
  void allocate_activations();
  Sublayer& feed_forward(const LayerWeights& w) { return w.moe ? static_cast<Sublayer&>(*moe_) : mlp_; }
  std::vector<LayerActs>& slot(std::int64_t micro_batch);
  // Where layer i's feed-forward output goes: the next layer's input and norm1, or the stage output (with
  // the final norm on the last stage).
  NormTarget after_layer(std::vector<LayerActs>& acts, std::size_t i);
  // --recompute full: layer i's forward on the scratch set of its kind from the saved input acts[i].x_in,
  // writing `out` (and `next`); then, when `backward`, the layer's backward on what that forward saved.
  void layer_from_input(std::vector<LayerActs>& acts, std::size_t i, void* out, const NormTarget& next,
                        bool backward);
  double output_forward();
  void output_backward(bool last_micro_batch);

  StepContext c_;
  MpiContext& mpi_;
  Communicator& control_;
  const bool first_stage_, last_stage_;
  const std::int64_t first_layer_;  // global index of this stage's first layer
  ModelWeights w_;
  ModelState state_;
  PipelineRunner pipeline_;
  std::unique_ptr<EmbeddingLayer> embedding_;  // first stage
  AttentionLayer attention_;
  MlpLayer mlp_;
  std::unique_ptr<MoeLayer> moe_;
  GradientReduction grads_;
  Optimizer optimizer_;
  std::vector<std::vector<LayerActs>> acts_;  // [slot][layer]; with --recompute full only each x_in
  const bool recompute_full_;
  // --recompute full: one set of saved activations per layer kind on this stage ([0] dense, [1] MoE), which
  // every layer of that kind borrows for one forward (and its backward), and where the recomputed forward's
  // output goes (the next layer's saved input is already there).
  LayerActs scratch_[2];
  DeviceBuffer discard_;
  DeviceBuffer x_out_, xn_out_, rstd_out_,
      logits_;  // the stage output; its final norm and logits (last stage)
};

}  // namespace fb::workloads::train
