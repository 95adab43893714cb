#include "workloads/train/gradient_reduction.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fb::workloads::train {

void GradientReduction::layer_done(std::int64_t layer) {
  const std::int64_t n_layers = static_cast<std::int64_t>(w_.layers.size()),
                     bucket = c_.o.shape.bucket_layers;
  tp_reduce_partial(layer);
  if (layer < n_layers && layer % bucket != 0) return;  // a bucket completes at its first layer
  const std::int64_t end_layer = layer == n_layers ? n_layers + 1 : std::min(layer + bucket, n_layers);
  reduce_range(w_.dense, c_.groups.dp.get(), c_.o.parallel.dp, w_.dense.layer_begin[layer],
               w_.dense.layer_begin[end_layer], "dp", "grads");
  if (w_.experts.count && layer < n_layers)
    reduce_range(w_.experts, c_.groups.edp.get(), c_.groups.edp->size(), w_.experts.layer_begin[layer],
                 w_.experts.layer_begin[std::min(end_layer, n_layers)], "edp", "expert_grads");
}

void GradientReduction::embedding_done() {
  if (w_.embedding < 0) return;
  reduce_range(w_.dense, c_.groups.dp.get(), c_.o.parallel.dp, 0, w_.dense.layer_begin[0], "dp", "grads");
}

// The TP-partial gradients of one layer (or, layer = layers(), of the final norm).
void GradientReduction::tp_reduce_partial(std::int64_t layer) {
  if (c_.o.parallel.tp == 1) return;
  if (layer == static_cast<std::int64_t>(w_.layers.size())) {
    if (c_.sp) tp_reduce_tensor(w_.final_norm);
    return;
  }
  const auto& w = w_.layers[static_cast<std::size_t>(layer)];
  if (c_.groups.kv_copies) kv_copies_reduce(w.qkv);
  if (c_.sp) {
    tp_reduce_tensor(w.attn_norm);
    tp_reduce_tensor(w.mlp_norm);
  }
  if (w.moe) tp_reduce_tensor(w.router);
}

void GradientReduction::tp_reduce_tensor(std::int64_t t) {
  const auto& ten = w_.dense.at(t);
  const std::int64_t n = ten.in * ten.out;
  c_.mark(kTpComm);
  void* g = weight_grad(c_, w_.dense, t);
  c_.groups.tp->allreduce(g, g, static_cast<std::size_t>(n), c_.dt, ReduceOp::sum);
  c_.count_collective("tp_allreduce/replicated_grads", static_cast<double>(n * c_.elem()));
}

// The kv head this rank shares with the other TP ranks whose query heads read it: each computed its
// gradient from its own query heads, the sum is the gradient of the one kv head of the model.
void GradientReduction::kv_copies_reduce(std::int64_t t) {
  const auto& ten = w_.dense.at(t);
  const auto& copied = ten.place.copied;  // K and V of the head, adjacent columns of the in×out tensor
  const std::int64_t n = copied.count * ten.in;
  c_.mark(kTpComm);
  void* g = c_.at(weight_grad(c_, w_.dense, t), copied.local * ten.in);
  c_.groups.kv_copies->allreduce(g, g, static_cast<std::size_t>(n), c_.dt, ReduceOp::sum);
  c_.count_collective("tp_allreduce/kv_head_grads", static_cast<double>(n * c_.elem()));
}

// [begin, end) is one gradient bucket (model_weights.cpp lays them out): all-reduced, or with a sharded
// optimizer reduce-scattered in place, each rank keeping the sum of its own part.
void GradientReduction::reduce_range(Region& r, Communicator* comm, std::int64_t size, std::int64_t begin,
                                     std::int64_t end, const char* group, const char* what) {
  if (size <= 1 || end <= begin) return;
  c_.mark(kDpComm);
  void* p = c_.at(r.grad, begin);
  const bool sharded = r.shards.shards() > 1;
  c_.count_collective(fmt::format("{}_{}/{}", group, sharded ? "reduce_scatter" : "allreduce", what),
                      static_cast<double>((end - begin) * c_.elem()));
  if (sharded) {
    const auto part = static_cast<std::size_t>((end - begin) / size);
    void* mine = c_.at(p, static_cast<std::int64_t>(part) * comm->rank());
    if (c_.o.overlap)
      pending_.push_back(comm->start_reduce_scatter(p, mine, part, c_.dt, ReduceOp::sum));
    else
      comm->reduce_scatter(p, mine, part, c_.dt, ReduceOp::sum);
    return;
  }
  const auto count = static_cast<std::size_t>(end - begin);
  if (c_.o.overlap)
    pending_.push_back(comm->start_allreduce(p, p, count, c_.dt, ReduceOp::sum));
  else
    comm->allreduce(p, p, count, c_.dt, ReduceOp::sum);
}

void GradientReduction::finish() {
  c_.mark(kDpComm);
  for (auto& r : pending_) r->wait();
  pending_.clear();
}

}  // namespace fb::workloads::train
