#pragma once
// The dense feed-forward sublayer (x_mid → up projection → SwiGLU/GeLU → down projection → tensor-parallel
// sum → + x_mid) and its backward; the same up/activation/down pair serves MoE's shared experts.
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

// up/activation/down of width f on all T rows of a.x_mid into Workspace tmp (this rank's TP partial);
// saves a.up and a.act.
void ffn_forward(StepContext& c, const Region& r, std::int64_t up_t, std::int64_t down_t, std::int64_t f,
                 LayerActs& a);
// Backward of ffn_forward from the output gradient g_a: d x_mid partial into g_b (g_c as scratch, a.up
// overwritten by its gradient), weight gradients accumulated.
void ffn_backward(StepContext& c, Region& r, std::int64_t up_t, std::int64_t down_t, std::int64_t f,
                  LayerActs& a);

class MlpLayer final : public Sublayer {
 public:
  MlpLayer(StepContext& c, Region& dense) : c_(c), dense_(dense) {}
  void allocate(LayerActs& a, const LayerWeights& w) override;
  void forward(LayerActs& a, const LayerWeights& w, void* out) override;
  void backward(LayerActs& a, const LayerWeights& w) override;

 private:
  StepContext& c_;
  Region& dense_;
};

}  // namespace fb::workloads::train
