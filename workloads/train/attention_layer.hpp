#pragma once
// The attention sublayer: norm1(x_in) (computed by the sublayer before) → Q/K/V projections with rotary
// embedding (GQA here, MLA in mla_attention.cpp) → the attention core (attention_core.hpp: blocked GEMMs or a
// fused engine) → output projection → tensor-parallel sum → x_mid = x_in + that, fused with norm2(x_mid);
// and its backward, through norm1.
#include <memory>

#include "workloads/train/attention_core.hpp"
#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

// The projections in front of the attention core.
class QkvProjection {
 public:
  virtual ~QkvProjection() = default;
  virtual void allocate(LayerActs& a) { (void)a; }
  // xn_in → qkv (token-major, T × qkv_width), rotary embedding applied to Q and K.
  virtual void forward(LayerActs& a, const LayerWeights& w) = 0;
  // d qkv (Workspace g_a) → d xn_in (g_c), summed over the TP ranks (this rank's rows with sequence
  // parallelism); weight gradients accumulated.
  virtual void backward(LayerActs& a, const LayerWeights& w) = 0;
};

// Grouped-query attention's fused QKV projection (MHA when kv heads = heads), RoPE on every Q and K head.
std::unique_ptr<QkvProjection> make_gqa_projection(StepContext& c, Region& dense);

class AttentionLayer final : public Sublayer {
 public:
  AttentionLayer(StepContext& c, Region& dense, std::unique_ptr<QkvProjection> projection,
                 std::unique_ptr<AttentionCore> core)
      : c_(c), dense_(dense), projection_(std::move(projection)), core_(std::move(core)) {}
  void allocate(LayerActs& a, const LayerWeights& w) override;
  void forward(LayerActs& a, const LayerWeights& w, void* out, const NormTarget& next) override;
  void backward(LayerActs& a, const LayerWeights& w) override;

 private:
  StepContext& c_;
  Region& dense_;
  std::unique_ptr<QkvProjection> projection_;
  std::unique_ptr<AttentionCore> core_;
};

}  // namespace fb::workloads::train
