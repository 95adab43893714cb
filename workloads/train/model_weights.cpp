#include "workloads/train/model_weights.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <tuple>
#include <utility>

#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "workloads/layer_gemm_shapes.hpp"

namespace fb::workloads::train {

std::int64_t Region::add(std::int64_t in, std::int64_t out, bool tp_replicated) {
  const std::int64_t t = add(in, out, whole_tensor(in, out));
  tensors.back().tp_replicated = tp_replicated;
  return t;
}

std::int64_t Region::add(std::int64_t in, std::int64_t out, TpPlacement place) {
  if (place.local_out() != out || place.row + in > place.whole_in)
    throw runtime_error("Region::add: the TP placement does not match the block (a bug)");
  tensors.push_back({count, in, out, false, false, std::move(place)});
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

// This rank's t and the TP degree, for the placements below.
struct TpRank {
  std::int64_t t, tp;
  ColumnPart even(std::int64_t whole) const { return even_part(whole, t, tp); }
  TpPlacement rows(std::int64_t local_in, std::int64_t out) const {
    return row_parallel(local_in, out, t, tp);
  }
};

TpRank tp_rank(const StepContext& c) {
  return {c.coords.t, c.o.parallel.tp};
}

void add_attention(const StepContext& c, Region& dense, LayerWeights& w) {
  const TpRank r = tp_rank(c);
  const std::int64_t h = c.m.hidden;
  w.attn_norm = dense.add_norm(h);
  if (c.m.mla) {
    const auto& a = *c.m.mla;
    if (a.q_lora_rank > 0) w.q_norm = dense.add_norm(a.q_lora_rank);
    w.kv_norm = dense.add_norm(a.kv_lora_rank);
    const std::int64_t H = c.m.heads, qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    for (const auto& p : mla_projections(c.m, r.tp)) {
      // The up projections are column-parallel over heads (kv_up: [V | k_nope], each over all heads), the
      // output projection row-parallel; the down projections are replicated.
      TpPlacement place = whole_tensor(p.in, p.out);
      if (p.role == "q_up" || p.role == "q") place = column_parallel(p.in, {r.even(H * qk)});
      if (p.role == "kv_up")
        place = column_parallel(p.in, {r.even(H * a.v_head_dim), r.even(H * a.qk_nope_head_dim)});
      if (p.role == "attn_out") place = r.rows(p.in, p.out);
      const std::int64_t t = p.tp_replicated ? dense.add(p.in, p.out, true) : dense.add(p.in, p.out, place);
      if (p.role == "q_down") w.q_down = t;
      if (p.role == "q_up") w.q_up = t;
      if (p.role == "q") w.q = t;
      if (p.role == "kv_down") w.kv_down = t;
      if (p.role == "kv_up") w.kv_up = t;
      if (p.role == "attn_out") w.attn_out = t;
    }
  } else {
    w.qkv = dense.add(h, c.l.qkv_width, gqa_qkv(h, c.m.heads, c.m.kv_heads, c.l.head_dim, r.t, r.tp));
    w.attn_out = dense.add(c.l.heads * c.l.head_dim, h, r.rows(c.l.heads * c.l.head_dim, h));
  }
}

// A feed-forward block's up projection (SwiGLU: [gate | up], each column-parallel) and down projection
// (row-parallel), `f` this rank's intermediate width.
std::pair<std::int64_t, std::int64_t> add_ffn(const StepContext& c, Region& dense, std::int64_t f) {
  const TpRank r = tp_rank(c);
  const std::int64_t h = c.m.hidden, whole = f * r.tp;
  std::vector<ColumnPart> parts{r.even(whole)};
  if (c.swiglu()) parts.push_back(r.even(whole));
  const std::int64_t up =
      dense.add(h, static_cast<std::int64_t>(parts.size()) * f, column_parallel(h, parts));
  return {up, dense.add(f, h, r.rows(f, h))};
}

void add_feed_forward(const StepContext& c, ModelWeights& mw, LayerWeights& w) {
  const std::int64_t h = c.m.hidden, up = c.swiglu() ? 2 : 1;
  w.mlp_norm = mw.dense.add_norm(h);
  if (w.moe) {
    w.router = mw.dense.add(h, c.m.moe->experts, true);
    if (c.l.shared_ffn > 0) std::tie(w.shared_up, w.shared_down) = add_ffn(c, mw.dense, c.l.shared_ffn);
    w.expert_up = static_cast<std::int64_t>(mw.experts.tensors.size());
    for (std::int64_t e = 0; e < c.l.local_experts; ++e) {
      mw.experts.add(h, up * c.l.expert_ffn);
      mw.experts.add(c.l.expert_ffn, h);
    }
  } else {
    std::tie(w.mlp_up, w.mlp_down) = add_ffn(c, mw.dense, c.l.ffn);
  }
}

// Columns of a weight block from their place in the whole tensor: element (i, j) of the whole in×out tensor
// (column-major) is element j·in + i of the tensor's seeded stream, ±[1/16, 1]/√in. `run`: which columns.
void fill_columns(float* out, const Region::Tensor& ten, const TpPlacement::Run& run, std::uint64_t seed) {
  const auto& p = ten.place;
  const double a = 1.0 / std::sqrt(static_cast<double>(p.whole_in));
  for (std::int64_t j = 0; j < run.count; ++j) {
    const auto first = static_cast<std::uint64_t>((run.whole + j) * p.whole_in + p.row);
    float* column = out + (run.local + j) * ten.in;
    for (std::int64_t i = 0; i < ten.in; ++i)
      column[i] = static_cast<float>(random_value_at(seed, first + static_cast<std::uint64_t>(i), a / 16, a));
  }
}

// Every weight of a region on the host, columns split over `threads` threads: an element's value depends only
// on its place, so any split writes the same bits. (About 1 s per 10^8 weights on one core; llama3-8b
// --layers 4 holds 1.9·10^9 on one rank.)
void fill_region(float* host, const Region& r, std::uint64_t seed, std::uint64_t replicated_seed,
                 int threads) {
  struct Job {
    std::size_t tensor;
    TpPlacement::Run run;  // a slice of one of its column runs
  };
  std::vector<Job> jobs;
  constexpr std::int64_t kJobElements = std::int64_t{1} << 20;
  for (std::size_t t = 0; t < r.tensors.size(); ++t) {
    const auto& ten = r.tensors[t];
    if (ten.ones) {
      std::fill_n(host + ten.offset, static_cast<std::size_t>(ten.in * ten.out), 1.0f);
      continue;
    }
    const std::int64_t step = std::max<std::int64_t>(1, kJobElements / std::max<std::int64_t>(ten.in, 1));
    for (const auto& run : ten.place.columns)
      for (std::int64_t j = 0; j < run.count; j += step)
        jobs.push_back({t, {run.local + j, run.whole + j, std::min(step, run.count - j)}});
  }
  std::atomic<std::size_t> next{0};
  const auto work = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < jobs.size();) {
      const auto& ten = r.tensors[jobs[k].tensor];
      const auto s = derive_seed(ten.tp_replicated ? replicated_seed : seed, r.seed_ids[jobs[k].tensor]);
      fill_columns(host + ten.offset, ten, jobs[k].run, s);
    }
  };
  std::vector<std::thread> pool;
  const auto helpers = std::min<std::size_t>(static_cast<std::size_t>(threads), jobs.size());
  for (std::size_t i = 1; i < helpers; ++i) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
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
  fill_region(host.data(), r, seed, replicated_seed, c.host_threads);
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
  // The vocabulary is padded to a multiple of TP (Megatron-LM pads it too): V = tp·⌈vocab/tp⌉ rows.
  const TpRank r = tp_rank(c);
  const std::int64_t vocab_rows = c.l.vocab * r.tp;
  if (first_stage)
    mw.embedding = mw.dense.add(c.m.hidden, c.l.vocab, column_parallel(c.m.hidden, {r.even(vocab_rows)}));
  mw.layers.resize(static_cast<std::size_t>(c.l.layers));
  for (std::int64_t i = 0; i < c.l.layers; ++i) {
    auto& w = mw.layers[static_cast<std::size_t>(i)];
    if (i % c.o.shape.bucket_layers ==
        0) {  // a gradient bucket ends (the embedding's, or the layers' before)
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
    mw.logits = mw.dense.add(c.m.hidden, c.l.vocab, column_parallel(c.m.hidden, {r.even(vocab_rows)}));
    mw.final_norm = mw.dense.add_norm(c.m.hidden);
  }
  mw.dense.close_bucket(dense_shards);
  mw.dense.layer_begin.push_back(mw.dense.count);
  mw.dense.shards = RegionShards(mw.dense.buckets, dense_shards, dense_shards > 1 ? c.groups.dp->rank() : 0);
  mw.experts.shards =
      RegionShards(mw.experts.buckets, expert_shards, expert_shards > 1 ? c.groups.edp->rank() : 0);

  // Seeded by the tensor's place in the model (experts: their global index) and each element's place in the
  // whole tensor: the same on every data-parallel replica, and the same model whatever the tensor-parallel
  // split, the pipeline split and the expert-parallel degree. (Stream 1000 was TP rank 0's before TP ranks
  // shared one: a run without TP keeps the weights it had.)
  const std::uint64_t replicated_seed = derive_seed(c.o.seed, 999);
  initialise(c, mw.dense, c.groups.dp.get(), derive_seed(c.o.seed, 1000), replicated_seed);
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
    if (name) c.count_collective(name, static_cast<double>(part * c.elem()));
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
