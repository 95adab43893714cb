#pragma once
// The MoE feed-forward sublayer on norm2(x_mid): shared experts (tensor-parallel, all tokens), the router,
// dispatch to the routed experts (moe_dispatch.cpp), grouped expert GEMMs with the real per-expert row counts
// (expert_gemms.cpp), combine, the residual add fused with the next norm, and the backward of each.
#include "workloads/train/moe_dispatch.hpp"
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

class MoeLayer final : public Sublayer {
 public:
  MoeLayer(StepContext& c, ModelWeights& w) : c_(c), w_(w), dispatch_(c) {}
  void allocate(LayerActs& a, const LayerWeights& w) override;
  void forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) override;
  void backward(LayerActs& a, const LayerWeights& w) override;
  const MoeDispatch& dispatch() const { return dispatch_; }

 private:
  void experts_forward(LayerActs& a, const LayerWeights& w);
  void experts_backward(LayerActs& a, const LayerWeights& w);
  StepContext& c_;
  ModelWeights& w_;
  MoeDispatch dispatch_;
};

}  // namespace fb::workloads::train
