#pragma once
// The dense feed-forward sublayer (norm2(x_mid) → up projection → SwiGLU/GeLU → down projection →
// tensor-parallel sum → out = x_mid + that, fused with the next norm) and its backward, through norm2; the
// same up/activation/down pair serves MoE's shared experts.
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

// up/activation/down of width f on all T rows of a.xn_mid into Workspace tmp (this rank's TP partial);
// saves a.up and a.act.
void ffn_forward(StepContext& c, const Region& r, std::int64_t up_t, std::int64_t down_t, std::int64_t f,
                 LayerActs& a);
// Backward of ffn_forward from the output gradient g_a: the d xn_mid partial into dx (g_c is scratch
// before that and may be dx; a.up is overwritten by its gradient), weight gradients accumulated.
void ffn_backward(StepContext& c, Region& r, std::int64_t up_t, std::int64_t down_t, std::int64_t f,
                  LayerActs& a, void* dx);

class MlpLayer final : public Sublayer {
 public:
  MlpLayer(StepContext& c, Region& dense) : c_(c), dense_(dense) {}
  void allocate(LayerActs& a, const LayerWeights& w) override;
  void forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) override;
  void backward(LayerActs& a, const LayerWeights& w) override;

 private:
  StepContext& c_;
  Region& dense_;
};

// The pre-norm buffers every feed-forward sublayer reads (norm2's output and 1/rms).
void allocate_feed_forward_norm(StepContext& c, LayerActs& a);

}  // namespace fb::workloads::train
