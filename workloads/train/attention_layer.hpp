#pragma once
// The attention sublayer: x_in → Q/K/V projections (GQA here, MLA in mla_attention.cpp) → causal attention
// core (attention_core.cpp) → output projection → tensor-parallel sum → + x_in = x_mid; and its backward.
#include <memory>

#include "workloads/train/attention_core.hpp"
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

// The projections in front of the attention core.
class QkvProjection {
 public:
  virtual ~QkvProjection() = default;
  virtual void allocate(LayerActs& a) { (void)a; }
  // x_in → qkv_t (feature-major, T × qkv_width).
  virtual void forward(LayerActs& a, const LayerWeights& w) = 0;
  // d qkv_t (Workspace g_a) → d x_in (g_c), summed over the TP ranks; weight gradients accumulated.
  virtual void backward(LayerActs& a, const LayerWeights& w) = 0;
};

// Grouped-query attention's fused QKV projection (MHA when kv heads = heads).
std::unique_ptr<QkvProjection> make_gqa_projection(StepContext& c, Region& dense);

class AttentionLayer final : public Sublayer {
 public:
  AttentionLayer(StepContext& c, Region& dense, std::unique_ptr<QkvProjection> projection)
      : c_(c), dense_(dense), projection_(std::move(projection)), core_(c) {}
  void allocate(LayerActs& a, const LayerWeights& w) override;
  void forward(LayerActs& a, const LayerWeights& w, void* out) override;
  void backward(LayerActs& a, const LayerWeights& w) override;

 private:
  StepContext& c_;
  Region& dense_;
  std::unique_ptr<QkvProjection> projection_;
  AttentionCore core_;
};

}  // namespace fb::workloads::train
