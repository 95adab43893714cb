#include "workloads/train/optimizer.hpp"

#include <vector>

namespace fb::workloads::train {
namespace {

// Every tensor of a region, held alike by `replicas` ranks (dense: DP; experts: expert-DP). The reduced
// gradient sums every micro-batch of every data-parallel rank's tokens (an expert's over the expert-DP ranks
// its tokens reached), so it is averaged over dp × micro-batches: the gradient of the mean loss, whatever
// spreads the experts. A sharded region contributes the parts of its tensors this rank owns; each element's
// reduced gradient then lives on one replica only, so it counts once in Σ grad² without the 1/replicas
// weight. The gradient norm is that of the averaged gradient the update applies, as Megatron-LM reports it:
// the raw sums' Σ g² weighted by average².
void add_region(StepContext& c, Region& r, double replicas, std::vector<kernels::AdamTensor>& out) {
  const double average =
      1.0 / (static_cast<double>(c.o.parallel.dp) * static_cast<double>(c.plan.shape.grad_accum));
  const auto scale = static_cast<float>(average);
  const double tp = static_cast<double>(c.o.parallel.tp);
  const bool sharded = r.shards.shards() > 1;
  for (const auto& t : r.tensors) {
    const double weight = average * average / ((sharded ? 1.0 : replicas) * (t.tp_replicated ? tp : 1.0));
    // Columns that several TP ranks hold alike (a kv head shared by fewer kv heads than TP ranks) count
    // once over them: the tensor in up to three column ranges, the middle one weighted 1/copies.
    const auto& copied = t.place.copied;
    const std::int64_t cuts[] = {0, copied.local * t.in, (copied.local + copied.count) * t.in, t.in * t.out};
    for (int range = 0; range < 3; ++range) {
      const double w = range == 1 ? weight / static_cast<double>(t.place.copies) : weight;
      // One shard owns every element at its own offset: each range is one piece.
      for (const auto& p : r.shards.owned_within(t.offset + cuts[range], cuts[range + 1] - cuts[range])) {
        kernels::AdamTensor a;
        a.master = r.master.as<float>() + p.local;
        a.m = r.m.as<float>() + p.local;
        a.v = r.v.as<float>() + p.local;
        a.grad = c.at(r.grad, p.global);
        a.param = c.at(r.param, p.global);
        a.count = p.count;
        a.grad_scale = scale;
        a.norm_weight = w;
        out.push_back(a);
      }
    }
  }
}

}  // namespace

Optimizer::Optimizer(StepContext& c, ModelWeights& w) : c_(c), w_(w) {
  std::vector<kernels::AdamTensor> tensors;
  add_region(c, w.dense, static_cast<double>(c.o.parallel.dp), tensors);
  if (w.experts.count) add_region(c, w.experts, static_cast<double>(c.groups.edp->size()), tensors);
  adam_ = kernels::make_multi_tensor_adam(c.backend, std::move(tensors), c.dt);
}

double Optimizer::step(std::int64_t step_number) {
  c_.mark(kOptimizer);
  kernels::AdamParams p;
  p.lr = c_.o.learning_rate;
  p.step = step_number;
  const double sq = adam_->step(p, true);
  // ZeRO-1: every rank updated its own parts; the weights are whole again after the all-gathers.
  if (w_.dense.shards.shards() > 1 || w_.experts.shards.shards() > 1) c_.mark(kDpComm);
  // Adam wrote this rank's parts of the weights; the all-gather brings the rest.
  allgather_weights(c_, w_.dense, *c_.groups.dp, "dp_allgather/params");
  if (w_.experts.count) allgather_weights(c_, w_.experts, *c_.groups.edp, "edp_allgather/expert_params");
  return sq;
}

}  // namespace fb::workloads::train
