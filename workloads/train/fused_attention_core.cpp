// The attention core through a fused engine (kernels/attention_engine.hpp: cuDNN SDPA on cuda, the host
// reference on host): one call per direction and micro-batch set, reading Q, K and V in place from the
// token-major QKV rows and writing the context rows; forward saves the log-sum-exp statistics (fp32,
// [micro-batch, heads, seq]) instead of probabilities.
#include <cmath>

#include "workloads/train/attention_core.hpp"

namespace fb::workloads::train {

kernels::AttentionShape attention_shape(const TrainPlan& plan) {
  const auto& l = plan.local;
  kernels::AttentionShape s;
  s.batch = plan.shape.micro_batch;
  s.seq = l.seq;
  s.heads = l.heads;
  s.kv_heads = l.kv_heads;
  s.head_dim = l.head_dim;
  s.value_dim = l.v_head_dim;
  s.causal = true;
  s.scale = 1.0f / std::sqrt(static_cast<float>(l.head_dim));
  s.q_row = s.k_row = s.v_row = l.qkv_width;
  s.o_row = l.heads * l.v_head_dim;
  return s;
}

namespace {

class FusedAttentionCore final : public AttentionCore {
 public:
  FusedAttentionCore(StepContext& c, kernels::FusedAttention& engine)
      : c_(c), engine_(engine), shape_(attention_shape(c.plan)) {}
  void allocate(LayerActs& a) override { a.stats = c_.alloc(shape_.batch * shape_.heads * shape_.seq, 4); }
  void forward(LayerActs& a) override {
    c_.mark(kAttention);
    engine_.forward(shape_, c_.dt, q(a.qkv.data()), k(a.qkv.data()), v(a.qkv.data()), a.ctx.data(),
                    a.stats.as<float>(), nullptr);
  }
  void backward(LayerActs& a, const void* dctx, void* dqkv) override {
    c_.mark(kAttention);
    engine_.backward(shape_, c_.dt, q(a.qkv.data()), k(a.qkv.data()), v(a.qkv.data()), a.ctx.data(), dctx,
                     a.stats.as<float>(), q(dqkv), k(dqkv), v(dqkv), nullptr);
  }

 private:
  // The Q, K and V column blocks of a qkv-shaped buffer.
  void* q(void* p) const { return p; }
  void* k(void* p) const { return c_.at(p, c_.l.heads * c_.l.head_dim); }
  void* v(void* p) const { return c_.at(p, (c_.l.heads + c_.l.kv_heads) * c_.l.head_dim); }
  StepContext& c_;
  kernels::FusedAttention& engine_;
  const kernels::AttentionShape shape_;
};

}  // namespace

std::unique_ptr<AttentionCore> make_fused_attention(StepContext& c, kernels::FusedAttention& engine) {
  return std::make_unique<FusedAttentionCore>(c, engine);
}

}  // namespace fb::workloads::train
