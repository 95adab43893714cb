#include "workloads/train/model_weights.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/random_fill.hpp"
#include "workloads/layer_gemm_shapes.hpp"

namespace fb::workloads::train {

std::int64_t Region::add(std::int64_t in, std::int64_t out, bool tp_replicated) {
  tensors.push_back({count, in, out, tp_replicated, false});
  seed_ids.push_back(next_id++);
  count += in * out;
  return static_cast<std::int64_t>(tensors.size()) - 1;
}

std::int64_t Region::add_norm(std::int64_t width) {
  const std::int64_t t = add(1, width, true);
  tensors.back().ones = true;
  return t;
}

void Region::close_bucket(int shard_count) {
  const std::int64_t begin = buckets.empty() ? 0 : buckets.back().end;
  if (count == begin) return;
  count = padded_bucket_end(begin, count - begin, shard_count);
  buckets.push_back({begin, count});
}

namespace {

void add_attention(const StepContext& c, Region& dense, LayerWeights& w) {
  w.attn_norm = dense.add_norm(c.m.hidden);
  if (c.m.mla) {
    const auto& a = *c.m.mla;
    if (a.q_lora_rank > 0) w.q_norm = dense.add_norm(a.q_lora_rank);
    w.kv_norm = dense.add_norm(a.kv_lora_rank);
    for (const auto& p : mla_projections(c.m, c.o.parallel.tp)) {
      const std::int64_t t = dense.add(p.in, p.out, p.tp_replicated);
      if (p.role == "q_down") w.q_down = t;
      if (p.role == "q_up") w.q_up = t;
      if (p.role == "q") w.q = t;
      if (p.role == "kv_down") w.kv_down = t;
      if (p.role == "kv_up") w.kv_up = t;
      if (p.role == "attn_out") w.attn_out = t;
    }
  } else {
    w.qkv = dense.add(c.m.hidden, c.l.qkv_width);
    w.attn_out = dense.add(c.l.heads * c.l.head_dim, c.m.hidden);
  }
}

void add_feed_forward(const StepContext& c, ModelWeights& mw, LayerWeights& w) {
  const std::int64_t h = c.m.hidden, up = c.swiglu() ? 2 : 1;
  w.mlp_norm = mw.dense.add_norm(h);
  if (w.moe) {
    w.router = mw.dense.add(h, c.m.moe->experts, true);
    if (c.l.shared_ffn > 0) {
      w.shared_up = mw.dense.add(h, up * c.l.shared_ffn);
      w.shared_down = mw.dense.add(c.l.shared_ffn, h);
    }
    w.expert_up = static_cast<std::int64_t>(mw.experts.tensors.size());
    for (std::int64_t e = 0; e < c.l.local_experts; ++e) {
      mw.experts.add(h, up * c.l.expert_ffn);
      mw.experts.add(c.l.expert_ffn, h);
    }
  } else {
    w.mlp_up = mw.dense.add(h, up * c.l.ffn);
    w.mlp_down = mw.dense.add(c.l.ffn, h);
  }
}

// Allocates a region's buffers and fills the weights (fp32 master, converted to the step dtype). A sharded
// region keeps only its own parts of the master weights and all-gathers the converted weights, which are
// then the same as an unsharded region's element for element.
void initialise(StepContext& c, Region& r, Communicator* group, std::uint64_t seed,
                std::uint64_t replicated_seed) {
  r.param = c.alloc(r.count, c.e);
  r.grad = c.alloc(r.count, c.e);
  r.master = c.alloc(r.master_count(), 4);
  r.m = c.alloc(r.master_count(), 4);
  r.v = c.alloc(r.master_count(), 4);
  if (r.count == 0) return;
  std::vector<float> host(static_cast<std::size_t>(r.count));  // the padding between buckets stays zero
  for (std::size_t t = 0; t < r.tensors.size(); ++t) {
    const auto& ten = r.tensors[t];
    const double a = 1.0 / std::sqrt(static_cast<double>(ten.in));
    const auto n = static_cast<std::size_t>(ten.in * ten.out);
    if (ten.ones)
      std::fill_n(host.data() + ten.offset, n, 1.0f);
    else
      fill_random_host(host.data() + ten.offset, n, DType::fp32,
                       derive_seed(ten.tp_replicated ? replicated_seed : seed, r.seed_ids[t]), a / 16, a);
  }
  // This rank's parts of the master weights (one shard: all of them), then the weights from them.
  for (const auto& p : r.shards.owned())
    c.backend.copy_to_device(r.master, host.data() + p.global, static_cast<std::size_t>(p.count) * 4,
                             static_cast<std::size_t>(p.local) * 4);
  weights_from_master(c, r, group);
  c.k->scale(r.m.data(), DType::fp32, r.master_count(), 0.0f);
  c.k->scale(r.v.data(), DType::fp32, r.master_count(), 0.0f);
}

}  // namespace

ModelWeights make_model_weights(StepContext& c, std::int64_t first_layer, bool first_stage, bool last_stage) {
  ModelWeights mw;
  // ZeRO-1 shards the dense optimizer state over DP and the experts' over expert-DP.
  const bool zero = c.plan.shape.distributed_optimizer;
  const int dense_shards = zero ? c.groups.dp->size() : 1;
  const int expert_shards = zero && c.groups.edp ? c.groups.edp->size() : 1;
  // The embedding table: this TP rank's vocab rows [t·V/T, …), h wide (stored h × rows: row v at v·h).
  mw.dense.next_id = std::uint64_t{1} << 41;
  if (first_stage) mw.embedding = mw.dense.add(c.m.hidden, c.l.vocab);
  mw.layers.resize(static_cast<std::size_t>(c.l.layers));
  for (std::int64_t i = 0; i < c.l.layers; ++i) {
    auto& w = mw.layers[static_cast<std::size_t>(i)];
    if (i % c.o.bucket_layers == 0) {  // a gradient bucket ends (the embedding's, or the layers' before)
      mw.dense.close_bucket(dense_shards);
      mw.experts.close_bucket(expert_shards);
    }
    mw.dense.layer_begin.push_back(mw.dense.count);
    mw.experts.layer_begin.push_back(mw.experts.count);
    mw.dense.next_id = static_cast<std::uint64_t>(first_layer + i) << 8;
    // Experts by their global index (EP rank r holds experts r·El … r·El + El − 1, two tensors each), so
    // that the model is the same whatever --ep spreads them over.
    mw.experts.next_id = (static_cast<std::uint64_t>(first_layer + i) << 24) +
                         2 * static_cast<std::uint64_t>(c.coords.ep_rank * c.l.local_experts);
    add_attention(c, mw.dense, w);
    w.moe = c.m.is_moe_layer(first_layer + i);
    add_feed_forward(c, mw, w);
  }
  mw.dense.close_bucket(dense_shards);
  mw.experts.close_bucket(expert_shards);
  mw.dense.layer_begin.push_back(mw.dense.count);
  mw.experts.layer_begin.push_back(mw.experts.count);
  mw.dense.next_id = std::uint64_t{1} << 40;
  if (last_stage) {
    mw.logits = mw.dense.add(c.m.hidden, c.l.vocab);
    mw.final_norm = mw.dense.add_norm(c.m.hidden);
  }
  mw.dense.close_bucket(dense_shards);
  mw.dense.layer_begin.push_back(mw.dense.count);
  mw.dense.shards = RegionShards(mw.dense.buckets, dense_shards, dense_shards > 1 ? c.groups.dp->rank() : 0);
  mw.experts.shards =
      RegionShards(mw.experts.buckets, expert_shards, expert_shards > 1 ? c.groups.edp->rank() : 0);

  // Seeded by this rank's TP shard and the tensor's place in the model (experts: their global index, not
  // TP-split): the same on every data-parallel replica, and the same model whatever the pipeline split and
  // the expert-parallel degree.
  const std::uint64_t replicated_seed = derive_seed(c.o.seed, 999);
  initialise(c, mw.dense, c.groups.dp.get(),
             derive_seed(c.o.seed, static_cast<std::uint64_t>(1000 + c.coords.t)), replicated_seed);
  initialise(c, mw.experts, c.groups.edp.get(), derive_seed(c.o.seed, 500000), replicated_seed);
  return mw;
}

Communicator* region_group(StepContext& c, const ModelWeights& w, const Region& r) {
  return &r == &w.experts ? c.groups.edp.get() : c.groups.dp.get();
}

void weights_from_master(StepContext& c, Region& r, Communicator* group) {
  for (const auto& p : r.shards.owned())
    c.k->convert_from_fp32(r.master.as<float>() + p.local, c.at(r.param, p.global), c.dt, p.count);
  if (group) allgather_weights(c, r, *group, nullptr);
}

void allgather_weights(StepContext& c, Region& r, Communicator& group, const char* name) {
  if (r.shards.shards() <= 1) return;
  const auto& buckets = r.shards.buckets();
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::int64_t part = r.shards.part(b);
    group.allgather(c.at(r.param, r.shards.owned_begin(b)), c.at(r.param, buckets[b].begin),
                    static_cast<std::size_t>(part), c.dt);
    if (name) c.count_bytes(name, static_cast<double>(part * c.elem()));
  }
}

const void* weight(const StepContext& c, const Region& r, std::int64_t t) {
  return c.at(r.param, r.tensors[static_cast<std::size_t>(t)].offset);
}
void* weight_grad(const StepContext& c, Region& r, std::int64_t t) {
  return c.at(r.grad, r.tensors[static_cast<std::size_t>(t)].offset);
}

void linear_forward(StepContext& c, const Region& r, std::int64_t t, const void* x, std::int64_t rows,
                    void* y, double beta, std::int64_t ld_x, std::int64_t ld_y) {
  const auto& w = r.at(t);
  c.gemm(w.out, rows, w.in, true, false, weight(c, r, t), w.in, x, ld_x ? ld_x : w.in, y, ld_y ? ld_y : w.out,
         beta);
}

void linear_dgrad(StepContext& c, const Region& r, std::int64_t t, const void* dy, std::int64_t rows,
                  void* dx, double beta, std::int64_t ld_dy, std::int64_t ld_dx) {
  const auto& w = r.at(t);
  c.gemm(w.in, rows, w.out, false, false, weight(c, r, t), w.in, dy, ld_dy ? ld_dy : w.out, dx,
         ld_dx ? ld_dx : w.in, beta);
}

void linear_wgrad(StepContext& c, Region& r, std::int64_t t, const void* x, const void* dy, std::int64_t rows,
                  std::int64_t ld_x, std::int64_t ld_dy) {
  const auto& w = r.at(t);
  c.gemm(w.in, w.out, rows, false, true, x, ld_x ? ld_x : w.in, dy, ld_dy ? ld_dy : w.out,
         weight_grad(c, r, t), w.in, 1.0);
}

}  // namespace fb::workloads::train
