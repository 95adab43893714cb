#include "workloads/train_step.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "core/statistics.hpp"
#include "kernels/gemm_engine.hpp"
#include "kernels/train_kernels.hpp"
#include "workloads/layer_gemm_shapes.hpp"
#include "workloads/pipeline_schedule.hpp"

namespace fb::workloads {

TrainPlan prepare_training(const TrainOptions& o, std::int64_t world) {
  ModelConfig model = load_model(o.model);
  if (o.layers < 0) throw usage_error(fmt::format("invalid --layers {}: must be positive", o.layers));
  if (o.layers > 0) {
    if (o.layers > model.layers)
      throw usage_error(
          fmt::format("invalid --layers {}: {} has only {} layers", o.layers, model.name, model.layers));
    model.layers = o.layers;
    if (model.moe && model.moe->first_dense_layers >= model.layers)
      model.moe->first_dense_layers = std::min(model.moe->first_dense_layers, model.layers - 1);
    validate_model(model, model.file.empty() ? model.name : model.file);
  }
  const auto positive = [](const char* option, std::int64_t v) {
    if (v < 1) throw usage_error(fmt::format("invalid {} {}: must be at least 1", option, v));
  };
  positive("--micro-batch", o.shape.micro_batch);
  positive("--grad-accum", o.shape.grad_accum);
  positive("--steps", o.steps);
  positive("--bucket-layers", o.bucket_layers);
  if (o.warmup_steps < 0 || o.warmup_steps >= o.steps)
    throw usage_error(
        fmt::format("invalid --warmup-steps {}: must be in [0, --steps {})", o.warmup_steps, o.steps));
  if (o.routing_skew < 0 || !std::isfinite(o.routing_skew))
    throw usage_error(fmt::format("invalid --routing-skew {}: must be >= 0", o.routing_skew));
  validate_layout(model, o.parallel, world);
  auto plan = make_plan(model, o.parallel, o.shape);
  // Each TP rank routes (MoE) and, with sequence parallelism, holds 1/T of a micro-batch's tokens.
  if (plan.local.tokens % o.parallel.tp != 0)
    throw usage_error(fmt::format("{}--seq x --micro-batch = {} tokens is not divisible by --tp {}",
                                  o.shape.sequence_parallel ? "--sequence-parallel: " : "", plan.local.tokens,
                                  o.parallel.tp));
  return plan;
}

namespace {

using Clock = std::chrono::steady_clock;
using kernels::GemmProblem;

// Categories of the step-time breakdown (docs/train.md).
enum Cat {
  kGemm,
  kAttention,
  kMoeRouting,
  kElementwise,
  kTpComm,
  kEpComm,
  kDpComm,
  kOptimizer,
  kBubble,
  kCats
};
constexpr const char* kCatNames[kCats] = {"gemm",
                                          "attention",
                                          "moe_dispatch_combine",
                                          "elementwise",
                                          "exposed_tp_comm",
                                          "exposed_ep_comm",
                                          "exposed_dp_comm",
                                          "optimizer",
                                          "pipeline_bubble"};

// One parameter region (dense: replicated over DP; experts: over expert-DP): weights and gradients in the
// step dtype, fp32 master weights and Adam moments.
struct Region {
  std::int64_t count = 0;
  DeviceBuffer param, grad, master, m, v;
  struct Tensor {
    std::int64_t offset, in, out;
    bool tp_replicated;  // identical on every TP rank (router, MLA down projections): seeded without t
  };
  std::vector<Tensor> tensors;
  std::vector<std::int64_t> layer_begin;  // element offset where each layer's tensors begin (+ end sentinel)
  // Seed id of each tensor: set `next_id` per model layer so that a tensor's initial values depend on its
  // place in the model, not on how pipeline stages split the layers.
  std::vector<std::uint64_t> seed_ids;
  std::uint64_t next_id = 0;
  std::int64_t add(std::int64_t in, std::int64_t out, bool tp_replicated = false) {
    tensors.push_back({count, in, out, tp_replicated});
    seed_ids.push_back(next_id++);
    count += in * out;
    return static_cast<std::int64_t>(tensors.size()) - 1;
  }
};

struct LayerWeights {
  std::int64_t qkv = -1, attn_out = -1, mlp_up = -1, mlp_down = -1, router = -1, shared_up = -1,
               shared_down = -1;
  std::int64_t q_down = -1, q_up = -1, q = -1, kv_down = -1, kv_up = -1;  // MLA (q: q_lora_rank 0)
  std::int64_t expert_up = -1, expert_down = -1;  // first local expert's tensor in the expert region
  bool moe = false;
};

// Saved activations of one layer for one micro-batch. x_in and x_mid hold all T rows (with sequence
// parallelism: all-gathered from each TP rank's T/tp rows). MLA: latent is the down projections' output
// (T × (q_lora + kv_lora + rope), feature-major), qkv_t holds [Q | K | V | kv_up's k_nope] column blocks.
struct LayerActs {
  DeviceBuffer x_in, qkv_t, probs, ctx_t, x_mid, up, act;  // dense/shared MLP: up, act
  DeviceBuffer latent;                                     // MLA
  // MoE
  DeviceBuffer router_logits, idx, weight, row_of_slot, counts, comb, expert_in, e_up, e_act;
  std::int64_t capacity = 0;                       // rows expert_in/e_up/e_act hold
  std::vector<std::int64_t> send_rows, recv_rows;  // per EP peer
  std::vector<std::int64_t> recv_matrix;           // [src][local expert] rows
  std::vector<std::int64_t> expert_rows;           // per local expert
  std::int64_t received = 0;
};

class Trainer final : public TrainStateAccess {
 public:
  Trainer(const TrainOptions& o, const TrainPlan& plan, MpiContext& mpi, Backend& backend)
      : o_(o),
        plan_(plan),
        m_(plan.model),
        l_(plan.local),
        mpi_(mpi),
        backend_(backend),
        dt_(plan.shape.dtype) {
    e_ = dtype_bytes(dt_);
    coords_ = rank_coords(mpi.rank(), o.parallel);
    const std::int64_t P = o.parallel.pp, M = plan.shape.grad_accum;
    first_stage_ = coords_.p == 0;
    last_stage_ = coords_.p == P - 1;
    first_layer_ = stage_layers(m_, o.parallel, coords_.p).first;
    schedule_ = one_f_one_b_schedule(P, coords_.p, M);
    slots_ = micro_batches_in_flight(P, coords_.p, M);
    sp_ = plan.shape.sequence_parallel && o.parallel.tp > 1;
    rows_ = sp_ ? l_.tokens / o.parallel.tp : l_.tokens;
    row0_ = sp_ ? coords_.t * rows_ : 0;
    gemm_ = kernels::make_gemm_engine(backend, dt_, {.local_ranks = mpi.local_size()});
    k_ = kernels::make_train_kernels(backend);
    make_communicators();
    build_weights();
    allocate_activations();
    init_data();
  }

  // --- TrainStateAccess -------------------------------------------------------------------------------
  std::uint64_t bytes() const override {
    return static_cast<std::uint64_t>(dense_.count + experts_.count) * 12;
  }
  void snapshot(std::span<std::byte> out) override {
    check_size(out.size());
    std::size_t at = 0;
    for (Region* r : {&dense_, &experts_})
      for (DeviceBuffer* b : {&r->master, &r->m, &r->v}) {
        const std::size_t n = static_cast<std::size_t>(r->count) * 4;
        if (n) backend_.copy_to_host(out.data() + at, *b, n);
        at += n;
      }
  }
  void restore(std::span<const std::byte> in) override {
    check_size(in.size());
    std::size_t at = 0;
    for (Region* r : {&dense_, &experts_}) {
      for (DeviceBuffer* b : {&r->master, &r->m, &r->v}) {
        const std::size_t n = static_cast<std::size_t>(r->count) * 4;
        if (n) backend_.copy_to_device(*b, in.data() + at, n);
        at += n;
      }
      if (r->count) k_->convert_from_fp32(r->master.as<float>(), r->param.data(), dt_, r->count);
    }
    backend_.synchronize();
  }
  std::uint64_t replicated_checksum() override {
    std::vector<float> host(static_cast<std::size_t>(dense_.count));
    backend_.copy_to_host(host.data(), dense_.master, host.size() * 4);
    return XXH3_64bits(host.data(), host.size() * 4);
  }
  void flip_bit(std::uint64_t bit_index) override {
    const std::uint64_t bits = static_cast<std::uint64_t>(dense_.count) * 32;
    const std::uint64_t b = bit_index % bits;
    const std::size_t element = static_cast<std::size_t>(b / 32);
    std::uint32_t word = 0;
    backend_.copy_to_host(&word, dense_.master, 4, element * 4);
    word ^= 1u << (b % 32);
    backend_.copy_to_device(dense_.master, &word, 4, element * 4);
    float value;
    std::memcpy(&value, &word, 4);
    std::vector<std::byte> converted(e_);
    store_param(value, converted.data());
    backend_.copy_to_device(dense_.param, converted.data(), e_, element * e_);
    backend_.synchronize();
  }
  void poison_next_loss() override { poison_ = true; }

  // --- the step -----------------------------------------------------------------------------------------
  struct StepStats {
    double seconds = 0, loss = 0, grad_norm = 0;
    bool local_finite = true;  // this rank's loss and gradient before the all-reduce (NaN origin)
    std::array<double, kCats> cat{};
  };

  StepStats step(std::int64_t step_number, bool profile) {
    profile_ = profile;
    cat_.fill(0);
    backend_.synchronize();
    mpi_.barrier();
    const auto start = Clock::now();
    mark_start_ = start;
    current_ = kElementwise;
    k_->scale(dense_.grad.data(), dt_, dense_.count, 0.0f);
    if (experts_.count) k_->scale(experts_.grad.data(), dt_, experts_.count, 0.0f);
    double local_loss = 0;
    // The stage's 1F1B schedule (without pipeline parallelism: F0 B0 F1 B1 ...).
    for (const auto& op : schedule_) {
      if (op.kind == PipeOpKind::forward)
        local_loss += forward(op.micro_batch);
      else if (op.kind == PipeOpKind::backward)
        backward(op.micro_batch, op.micro_batch + 1 == plan_.shape.grad_accum);
      else
        transfer(op);
    }
    finish_gradient_reduction();
    const double sq = gradient_sum_squares();
    optimizer(step_number);
    mark(kElementwise);
    backend_.synchronize();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    cat_[current_] += std::chrono::duration<double>(Clock::now() - mark_start_).count();

    // Loss and gradient norm agreed by all ranks (a NaN anywhere spreads, as it would through the gradients).
    double sums[2] = {local_loss / static_cast<double>(plan_.shape.grad_accum), sq};
    if (poison_) sums[0] = sums[1] = std::numeric_limits<double>::quiet_NaN();
    poison_ = false;
    const bool local_finite = std::isfinite(sums[0]) && std::isfinite(sums[1]);
    FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, mpi_.world()));
    StepStats s;
    s.local_finite = local_finite;
    s.seconds = seconds;
    s.loss = sums[0] / static_cast<double>(mpi_.size() / o_.parallel.pp);  // the last stage's ranks
    s.grad_norm = std::sqrt(sums[1]);
    s.cat = cat_;
    return s;
  }

  std::uint64_t allocated() const { return allocated_; }
  const std::string engine_name() const { return gemm_->name(); }
  bool emulated() const { return gemm_->emulated(); }
  std::int64_t sent_rows() const { return sent_rows_; }
  std::int64_t received_rows() const { return received_rows_; }
  const std::vector<double>& expert_tokens() const { return expert_tokens_; }
  std::map<std::string, double> take_collective_bytes() {
    auto out = std::move(coll_bytes_);
    coll_bytes_.clear();
    return out;
  }

 private:
  // --- setup ----------------------------------------------------------------------------------------------
  void check_size(std::size_t n) const {
    if (n != bytes())
      throw runtime_error(fmt::format("train state: buffer of {} bytes, expected {}", n, bytes()));
  }
  void store_param(float v, std::byte* out) const {
    if (dt_ == DType::fp32) {
      std::memcpy(out, &v, 4);
    } else {
      const std::uint16_t b = float_to_bf16_bits(v);
      std::memcpy(out, &b, 2);
    }
  }
  static std::uint16_t float_to_bf16_bits(float v);

  DeviceBuffer alloc(std::int64_t elements, std::size_t element_bytes) {
    const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * element_bytes;
    allocated_ += n;
    return backend_.allocate(n);
  }
  DeviceBuffer act(std::int64_t elements) { return alloc(elements, e_); }
  void* at(const DeviceBuffer& b, std::int64_t elements) const {
    return static_cast<char*>(b.data()) + elements * static_cast<std::int64_t>(e_);
  }

  void make_communicators() {
    world_ = make_communicator(mpi_, backend_);
    const auto& c = o_.parallel;
    const auto& r = coords_;
    tp_ = world_->split(static_cast<int>(r.p * c.dp + r.d), static_cast<int>(r.t));
    dp_ = world_->split(static_cast<int>(r.p * c.tp + r.t), static_cast<int>(r.d));
    if (m_.moe) {
      const std::int64_t groups = c.dp * c.tp / c.ep;
      ep_ = world_->split(static_cast<int>(r.p * groups + r.ep_group), static_cast<int>(r.ep_rank));
      edp_ = world_->split(static_cast<int>(r.p * c.ep + r.ep_rank), static_cast<int>(r.ep_group));
    }
    // Pipeline: one two-rank communicator per pair of neighbouring stages with the same (d, t), rank 0 the
    // earlier stage. Boundary b joins stages b and b+1; a rank is in at most one boundary of each parity, so
    // two splits build them all.
    if (c.pp > 1) {
      const std::int64_t lanes = c.dp * c.tp, lane = r.d * c.tp + r.t;
      for (std::int64_t parity = 0; parity < 2; ++parity) {
        std::int64_t b = -1;
        if (r.p % 2 == parity && r.p + 1 < c.pp)
          b = r.p;  // lower side: the next stage
        else if (r.p >= 1 && (r.p - 1) % 2 == parity)
          b = r.p - 1;  // upper side: the previous stage
        auto pair = world_->split(b < 0 ? -1 : static_cast<int>(b * lanes + lane), static_cast<int>(r.p));
        if (b == r.p)
          next_ = std::move(pair);
        else if (b >= 0)
          prev_ = std::move(pair);
      }
    }
  }

  void build_weights() {
    const std::int64_t h = m_.hidden, up = m_.activation == Activation::swiglu ? 2 : 1;
    // This pipeline stage's layers (all of them without pipeline parallelism).
    layers_.resize(static_cast<std::size_t>(l_.layers));
    for (std::int64_t i = 0; i < l_.layers; ++i) {
      auto& w = layers_[i];
      dense_.layer_begin.push_back(dense_.count);
      experts_.layer_begin.push_back(experts_.count);
      dense_.next_id = static_cast<std::uint64_t>(first_layer_ + i) << 8;
      experts_.next_id = static_cast<std::uint64_t>(first_layer_ + i) << 24;
      if (m_.mla) {
        for (const auto& p : mla_projections(m_, o_.parallel.tp)) {
          const std::int64_t t = dense_.add(p.in, p.out, p.tp_replicated);
          if (p.role == "q_down") w.q_down = t;
          if (p.role == "q_up") w.q_up = t;
          if (p.role == "q") w.q = t;
          if (p.role == "kv_down") w.kv_down = t;
          if (p.role == "kv_up") w.kv_up = t;
          if (p.role == "attn_out") w.attn_out = t;
        }
      } else {
        w.qkv = dense_.add(h, l_.qkv_width);
        w.attn_out = dense_.add(l_.heads * l_.head_dim, h);
      }
      w.moe = m_.is_moe_layer(first_layer_ + i);
      if (w.moe) {
        w.router = dense_.add(h, m_.moe->experts, true);
        if (l_.shared_ffn > 0) {
          w.shared_up = dense_.add(h, up * l_.shared_ffn);
          w.shared_down = dense_.add(l_.shared_ffn, h);
        }
        w.expert_up = static_cast<std::int64_t>(experts_.tensors.size());
        for (std::int64_t e = 0; e < l_.local_experts; ++e) {
          experts_.add(h, up * l_.expert_ffn);
          experts_.add(l_.expert_ffn, h);
        }
      } else {
        w.mlp_up = dense_.add(h, up * l_.ffn);
        w.mlp_down = dense_.add(l_.ffn, h);
      }
    }
    dense_.layer_begin.push_back(dense_.count);
    experts_.layer_begin.push_back(experts_.count);
    dense_.next_id = std::uint64_t{1} << 40;
    if (last_stage_) logits_w_ = dense_.add(h, l_.vocab);
    dense_.layer_begin.push_back(dense_.count);

    // Weights ~ ±[1/16, 1]/√in (fan-in scaled, never zero), seeded by this rank's TP shard (experts: EP rank)
    // and the tensor's place in the model: the same on every data-parallel replica, and the same model
    // whatever the pipeline split.
    const std::uint64_t dense_seed = derive_seed(o_.seed, static_cast<std::uint64_t>(1000 + coords_.t));
    const std::uint64_t replicated_seed = derive_seed(o_.seed, 999);
    const std::uint64_t expert_seed =
        derive_seed(o_.seed, static_cast<std::uint64_t>(500000 + coords_.ep_rank));
    for (auto [r, seed] : {std::pair{&dense_, dense_seed}, std::pair{&experts_, expert_seed}}) {
      r->param = alloc(r->count, e_);
      r->grad = alloc(r->count, e_);
      r->master = alloc(r->count, 4);
      r->m = alloc(r->count, 4);
      r->v = alloc(r->count, 4);
      if (r->count == 0) continue;
      std::vector<float> host(static_cast<std::size_t>(r->count));
      for (std::size_t t = 0; t < r->tensors.size(); ++t) {
        const auto& ten = r->tensors[t];
        const double a = 1.0 / std::sqrt(static_cast<double>(ten.in));
        fill_random_host(host.data() + ten.offset, static_cast<std::size_t>(ten.in * ten.out), DType::fp32,
                         derive_seed(ten.tp_replicated ? replicated_seed : seed, r->seed_ids[t]), a / 16, a);
      }
      backend_.copy_to_device(r->master, host.data(), host.size() * 4);
      k_->convert_from_fp32(r->master.as<float>(), r->param.data(), dt_, r->count);
      k_->scale(r->m.data(), DType::fp32, r->count, 0.0f);
      k_->scale(r->v.data(), DType::fp32, r->count, 0.0f);
    }
  }

  void allocate_activations() {
    const std::int64_t T = l_.tokens, h = m_.hidden, up = m_.activation == Activation::swiglu ? 2 : 1;
    const std::int64_t B = l_.attn_block, nb = l_.seq / B;
    probs_per_seq_ = l_.heads * B * B * nb * (nb + 1) / 2;
    // One set per micro-batch in flight (1F1B: min(P − stage, grad_accum); 1 without pipelining).
    acts_.resize(static_cast<std::size_t>(slots_));
    for (auto& slot_acts : acts_) {
      slot_acts.resize(layers_.size());
      for (std::size_t i = 0; i < layers_.size(); ++i) {
        auto& a = slot_acts[i];
        a.x_in = act(T * h);
        a.qkv_t = act(T * l_.qkv_width);
        a.probs = act(probs_per_seq_ * plan_.shape.micro_batch);
        a.ctx_t = act(T * l_.heads * l_.v_head_dim);
        a.x_mid = act(T * h);
        if (m_.mla) a.latent = act(T * l_.mla_latent);
        if (layers_[i].moe) {
          const std::int64_t Tm = l_.moe_tokens, k = m_.moe->top_k;
          a.router_logits = act(Tm * m_.moe->experts);
          a.idx = alloc(Tm * k, 4);
          a.weight = alloc(Tm * k, 4);
          a.row_of_slot = alloc(Tm * k, 4);
          a.counts = alloc(m_.moe->experts, 8);
          a.comb = act(Tm * k * h);
          if (l_.shared_ffn > 0) {
            a.up = act(T * up * l_.shared_ffn);
            a.act = act(T * l_.shared_ffn);
          }
          grow_experts(a, 2 * Tm * k);
        } else {
          a.up = act(T * up * l_.ffn);
          a.act = act(T * l_.ffn);
        }
      }
    }
    if (m_.mla) {
      // Column blocks of the K assembly (forward) and of its gradient (backward), per head j:
      // K_j = [k_nope_j (from kv_up's output, staged after V) | k_rope (latent's last columns)].
      const auto& c = *m_.mla;
      const std::int64_t nh = l_.heads, dq = l_.head_dim, nope = c.qk_nope_head_dim;
      const std::int64_t k_col = nh * dq, staged = 2 * nh * dq + nh * l_.v_head_dim;
      for (std::int64_t j = 0; j < nh; ++j) {
        mla_.k_nope.push_back(k_col + j * dq);
        mla_.nope_staged.push_back(staged + j * nope);
        mla_.nope_cols.push_back(nope);
        mla_.k_rope.push_back(k_col + j * dq + nope);
        mla_.rope_latent.push_back(c.q_lora_rank + c.kv_lora_rank);
        mla_.rope_cols.push_back(c.qk_rope_head_dim);
      }
      dlat_ = act(T * l_.mla_latent);
    }
    x_out_ = act(T * h);
    if (last_stage_) logits_ = act(T * l_.vocab);
    const std::int64_t widest = std::max({h, l_.qkv_width, l_.heads * l_.head_dim, l_.heads * l_.v_head_dim,
                                          up * std::max(l_.ffn, l_.shared_ffn), l_.vocab});
    tmp_ = act(T * std::max(h, l_.heads * l_.head_dim));
    g_a_ = act(T * widest);
    g_b_ = act(T * widest);
    g_c_ = act(T * widest);
    dprobs_ = act(l_.heads * l_.seq * B);
    if (m_.moe) {
      const std::int64_t slots = l_.moe_tokens * m_.moe->top_k;
      perm_ = act(slots * h);
      d_weight_ = alloc(slots, 4);
      d_router_ = act(l_.moe_tokens * m_.moe->experts);
      std::vector<float> bias(static_cast<std::size_t>(m_.moe->experts));
      for (std::size_t e = 0; e < bias.size(); ++e)
        bias[e] = static_cast<float>(-o_.routing_skew * std::log1p(static_cast<double>(e)));
      router_bias_ = alloc(m_.moe->experts, 4);
      backend_.copy_to_device(router_bias_, bias.data(), bias.size() * 4);
      counts_dev_ = alloc(2 * o_.parallel.ep * l_.local_experts, 4);
      expert_tokens_.assign(static_cast<std::size_t>(m_.moe->experts), 0.0);
    }
  }

  // (Re)sizes a layer's expert buffers and the shared scratch to hold `rows` routed rows.
  void grow_experts(LayerActs& a, std::int64_t rows) {
    const std::int64_t h = m_.hidden, up = m_.activation == Activation::swiglu ? 2 : 1;
    if (rows > a.capacity) {
      a.capacity = rows + rows / 4;
      a.expert_in = act(a.capacity * h);
      a.e_up = act(a.capacity * up * l_.expert_ffn);
      a.e_act = act(a.capacity * l_.expert_ffn);
    }
    if (a.capacity > scratch_rows_) {
      scratch_rows_ = a.capacity;
      const std::int64_t w = std::max(h, up * l_.expert_ffn);
      scratch_a_ = act(scratch_rows_ * w);
      scratch_b_ = act(scratch_rows_ * w);
    }
  }

  void init_data() {
    // Input activations (the embedding output) per data-parallel rank on the first pipeline stage; TP ranks
    // of a group share them.
    if (!first_stage_) return;
    input_ = act(l_.tokens * m_.hidden);
    backend_.fill_random(input_, dt_,
                         derive_seed(o_.seed, static_cast<std::uint64_t>(77 + coords_.p * 4096 + coords_.d)),
                         0.0625, 1.0);
  }

  // --- helpers ---------------------------------------------------------------------------------------------
  void mark(Cat c) {
    if (c == current_) return;
    if (profile_) backend_.synchronize();
    const auto now = Clock::now();
    cat_[current_] += std::chrono::duration<double>(now - mark_start_).count();
    mark_start_ = now;
    current_ = c;
  }

  void gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, const void* a, std::int64_t lda,
            const void* b, std::int64_t ldb, void* c, std::int64_t ldc, double beta, std::int64_t batch = 1,
            std::int64_t sa = 0, std::int64_t sb = 0, std::int64_t sc = 0) {
    if (m == 0 || n == 0 || k == 0) return;
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.transa = ta;
    p.transb = tb;
    p.dtype = dt_;
    p.lda = lda;
    p.ldb = ldb;
    p.ldc = ldc;
    p.beta = beta;
    p.batch = batch;
    p.stride_a = sa;
    p.stride_b = sb;
    p.stride_c = sc;
    gemm_->run(p, a, b, c);
  }
  // Linear layer with W stored in×out (column-major, lda = in), activations width×tokens.
  const void* weight(const Region& r, std::int64_t t) const { return at(r.param, r.tensors[t].offset); }
  void* wgrad_ptr(Region& r, std::int64_t t) { return at(r.grad, r.tensors[t].offset); }
  void linear_fwd(const Region& r, std::int64_t t, const void* x, std::int64_t rows, void* y,
                  double beta = 0) {
    const auto& w = r.tensors[t];
    gemm(w.out, rows, w.in, true, false, weight(r, t), w.in, x, w.in, y, w.out, beta);
  }
  void linear_dgrad(const Region& r, std::int64_t t, const void* dy, std::int64_t rows, void* dx,
                    double beta = 0) {
    const auto& w = r.tensors[t];
    gemm(w.in, rows, w.out, false, false, weight(r, t), w.in, dy, w.out, dx, w.in, beta);
  }
  void linear_wgrad(Region& r, std::int64_t t, const void* x, const void* dy, std::int64_t rows) {
    const auto& w = r.tensors[t];
    gemm(w.in, w.out, rows, false, true, x, w.in, dy, w.out, wgrad_ptr(r, t), w.in, 1.0);
  }

  // Tensor-parallel sum of the ranks' partial T×h outputs (buf): all-reduce, or with sequence parallelism a
  // reduce-scatter that leaves this rank's rows, summed, at my_rows(buf) (in place).
  void tp_reduce(void* buf, const char* what) {
    if (o_.parallel.tp == 1) return;
    mark(kTpComm);
    const std::int64_t n = l_.tokens * m_.hidden;
    if (sp_) {
      tp_->reduce_scatter(buf, my_rows(buf), static_cast<std::size_t>(rows_ * m_.hidden), dt_, ReduceOp::sum);
      coll_bytes_[std::string("tp_reduce_scatter/") + what] += static_cast<double>(n * elem());
    } else {
      tp_->allreduce(buf, buf, static_cast<std::size_t>(n), dt_, ReduceOp::sum);
      coll_bytes_[std::string("tp_allreduce/") + what] += static_cast<double>(n * elem());
    }
  }
  // Sequence parallelism: in-place all-gather of every TP rank's rows of a T×h buffer (no-op otherwise).
  void tp_gather(void* buf, const char* what) {
    if (!sp_) return;
    mark(kTpComm);
    tp_->allgather(my_rows(buf), buf, static_cast<std::size_t>(rows_ * m_.hidden), dt_);
    coll_bytes_[std::string("tp_allgather/") + what] += static_cast<double>(rows_ * m_.hidden * elem());
  }
  std::int64_t elem() const { return static_cast<std::int64_t>(e_); }
  // This rank's rows of a T×h (token-major) buffer: all of them, or T/tp with sequence parallelism.
  void* my_rows(void* p) const { return static_cast<char*>(p) + row0_ * m_.hidden * elem(); }
  void* my_rows(const DeviceBuffer& b) const { return my_rows(b.data()); }
  void* at(void* p, std::int64_t elements) const { return static_cast<char*>(p) + elements * elem(); }
  void copy(void* dst, const void* src, std::int64_t elements) {
    const std::int64_t zero = 0;
    k_->copy_row_blocks(src, dst, dt_, elements, 1, &zero, &zero, &(one_));
  }
  // Copies column blocks of feature-major (T × width, ld T) buffers: blocks b of cols[b] columns.
  void copy_columns(const void* src, void* dst, const std::vector<std::int64_t>& src_col,
                    const std::vector<std::int64_t>& dst_col, const std::vector<std::int64_t>& cols) {
    k_->copy_row_blocks(src, dst, dt_, l_.tokens, static_cast<std::int64_t>(cols.size()), src_col.data(),
                        dst_col.data(), cols.data());
  }
  std::vector<LayerActs>& slot(std::int64_t micro_batch) {
    return acts_[static_cast<std::size_t>(micro_batch % static_cast<std::int64_t>(acts_.size()))];
  }

  // --- pipeline transfers
  // ----------------------------------------------------------------------------------- Blocking
  // point-to-point with a neighbouring stage over the two-rank communicator of the pair (rank 0 the earlier
  // stage): broadcast from the sender for one direction, sendrecv for the combined exchanges. Time blocked
  // here (waiting for the neighbour, and the transfer) is the pipeline bubble.
  void transfer(const PipeOp& op) {
    mark(kBubble);
    const std::int64_t n = rows_ * m_.hidden;
    const auto count = static_cast<std::size_t>(n);
    const double bytes = static_cast<double>(n * elem());
    const auto input_of = [&](std::int64_t mb) { return my_rows(slot(mb)[0].x_in); };
    switch (op.kind) {
      case PipeOpKind::recv_forward:
        prev_->broadcast(input_of(op.micro_batch), input_of(op.micro_batch), count, dt_, 0);
        coll_bytes_["pp_p2p/activations"] += bytes;
        break;
      case PipeOpKind::send_forward:
        next_->broadcast(my_rows(x_out_), my_rows(x_out_), count, dt_, 0);
        coll_bytes_["pp_p2p/activations"] += bytes;
        break;
      case PipeOpKind::send_forward_recv_backward:
        next_->sendrecv(my_rows(x_out_), 1, my_rows(g_a_), 1, count, dt_);
        coll_bytes_["pp_p2p/activations"] += bytes;
        coll_bytes_["pp_p2p/grads"] += bytes;
        break;
      case PipeOpKind::recv_backward:
        next_->broadcast(my_rows(g_a_), my_rows(g_a_), count, dt_, 1);
        coll_bytes_["pp_p2p/grads"] += bytes;
        break;
      case PipeOpKind::send_backward:
        prev_->broadcast(my_rows(g_a_), my_rows(g_a_), count, dt_, 1);
        coll_bytes_["pp_p2p/grads"] += bytes;
        break;
      case PipeOpKind::send_backward_recv_forward:
        prev_->sendrecv(my_rows(g_a_), 0, input_of(op.other_micro_batch), 0, count, dt_);
        coll_bytes_["pp_p2p/activations"] += bytes;
        coll_bytes_["pp_p2p/grads"] += bytes;
        break;
      case PipeOpKind::forward:
      case PipeOpKind::backward:
        break;
    }
  }

  // --- forward ---------------------------------------------------------------------------------------------
  // One micro-batch through this stage's layers; the first stage reads the embedding output, the last runs
  // the output layer and returns the loss.
  double forward(std::int64_t micro_batch) {
    auto& acts = slot(micro_batch);
    if (first_stage_) {
      mark(kElementwise);
      copy(my_rows(acts[0].x_in), my_rows(input_), rows_ * m_.hidden);
    }
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      void* out = i + 1 < layers_.size() ? acts[i + 1].x_in.data() : x_out_.data();
      attention_forward(acts[i], layers_[i]);
      if (layers_[i].moe)
        moe_forward(acts[i], layers_[i], out);
      else
        mlp_forward(acts[i], layers_[i], out);
    }
    return last_stage_ ? logits_and_loss() : 0.0;
  }

  void attention_forward(LayerActs& a, const LayerWeights& w) {
    const std::int64_t T = l_.tokens, h = m_.hidden, W = l_.qkv_width, hd = l_.heads * l_.v_head_dim;
    tp_gather(a.x_in.data(), "attn_in");
    // QKV, feature-major: qkv_t is T×W (column-major, ld T), so every head is a T×d block.
    mark(kGemm);
    if (m_.mla)
      mla_forward(a, w);
    else
      gemm(T, W, h, true, false, a.x_in.data(), h, weight(dense_, w.qkv), h, a.qkv_t.data(), T, 0.0);
    attention_core_forward(a);
    mark(kGemm);
    gemm(h, T, hd, true, true, weight(dense_, w.attn_out), hd, a.ctx_t.data(), T, tmp_.data(), h, 0.0);
    tp_reduce(tmp_.data(), "attn_out");
    mark(kElementwise);
    copy(my_rows(a.x_mid), my_rows(a.x_in), rows_ * h);
    k_->add(my_rows(a.x_mid), my_rows(tmp_), dt_, rows_ * h);
  }

  // MLA projections (shapes: mla_projections in workloads/layer_gemm_shapes.hpp), feature-major. latent =
  // [c_q | c_kv | k_rope] from the down projections; Q from q_up (or q); kv_up writes [V | k_nope] at the V
  // columns of qkv_t; each head's K = [k_nope_j | k_rope] is assembled so the attention core runs one GEMM
  // with head dim nope + rope for scores and v_head_dim for the context.
  void mla_forward(LayerActs& a, const LayerWeights& w) {
    const auto& c = *m_.mla;
    const std::int64_t T = l_.tokens, h = m_.hidden, nh = l_.heads, dq = l_.head_dim, dv = l_.v_head_dim;
    const std::int64_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, rope = c.qk_rope_head_dim;
    const std::int64_t v_col = 2 * nh * dq;
    if (ql > 0) {
      gemm(T, ql, h, true, false, a.x_in.data(), h, weight(dense_, w.q_down), h, a.latent.data(), T, 0.0);
      gemm(T, nh * dq, ql, false, false, a.latent.data(), T, weight(dense_, w.q_up), ql, a.qkv_t.data(), T,
           0.0);
    } else {
      gemm(T, nh * dq, h, true, false, a.x_in.data(), h, weight(dense_, w.q), h, a.qkv_t.data(), T, 0.0);
    }
    gemm(T, kvl + rope, h, true, false, a.x_in.data(), h, weight(dense_, w.kv_down), h, at(a.latent, ql * T),
         T, 0.0);
    gemm(T, nh * (dv + c.qk_nope_head_dim), kvl, false, false, at(a.latent, ql * T), T,
         weight(dense_, w.kv_up), kvl, at(a.qkv_t, v_col * T), T, 0.0);
    mark(kElementwise);
    copy_columns(a.qkv_t.data(), a.qkv_t.data(), mla_.nope_staged, mla_.k_nope, mla_.nope_cols);
    copy_columns(a.latent.data(), a.qkv_t.data(), mla_.rope_latent, mla_.k_rope, mla_.rope_cols);
  }

  // Causal attention on lower-triangular blocks only: query block i of B tokens attends keys [0, (i+1)·B).
  // One GEMM per query head of a kv group, batched over the groups (GQA shares K and V inside a group; MLA:
  // one head per group). Q/K head dim d, V head dim dv.
  struct Strip {
    std::int64_t keys, offset;  // probs offset of head (group 0, j = 0) within the sequence's region
  };
  Strip strip(std::int64_t i) const {
    const std::int64_t B = l_.attn_block;
    return {(i + 1) * B, l_.heads * B * B * i * (i + 1) / 2};
  }
  void attention_core_forward(LayerActs& a) {
    mark(kAttention);
    const std::int64_t T = l_.tokens, d = l_.head_dim, dv = l_.v_head_dim, B = l_.attn_block, nb = l_.seq / B;
    const std::int64_t G = l_.kv_heads, hpg = l_.heads / G;
    const std::int64_t k_col = l_.heads * d, v_col = k_col + G * d;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (std::int64_t s = 0; s < plan_.shape.micro_batch; ++s) {
      const std::int64_t t0 = s * l_.seq;
      for (std::int64_t i = 0; i < nb; ++i) {
        const auto [keys, off] = strip(i);
        void* probs = at(a.probs, s * probs_per_seq_ + off);
        const std::int64_t sz = keys * B;
        for (std::int64_t j = 0; j < hpg; ++j) {
          const void* K = at(a.qkv_t, k_col * T + t0);
          const void* Q = at(a.qkv_t, j * d * T + t0 + i * B);
          gemm(keys, B, d, false, true, K, T, Q, T, at(a.probs, s * probs_per_seq_ + off + j * G * sz), keys,
               0.0, G, d * T, hpg * d * T, sz);
        }
        k_->causal_softmax(probs, dt_, keys, B, i * B, l_.heads, sz, scale);
        for (std::int64_t j = 0; j < hpg; ++j) {
          const void* P = at(a.probs, s * probs_per_seq_ + off + j * G * sz);
          const void* V = at(a.qkv_t, v_col * T + t0);
          gemm(B, dv, keys, true, false, P, keys, V, T, at(a.ctx_t, j * dv * T + t0 + i * B), T, 0.0, G, sz,
               dv * T, hpg * dv * T);
        }
      }
    }
  }

  void mlp_forward(LayerActs& a, const LayerWeights& w, void* out) {
    const std::int64_t T = l_.tokens, h = m_.hidden;
    tp_gather(a.x_mid.data(), "mlp_in");
    mark(kGemm);
    linear_fwd(dense_, w.mlp_up, a.x_mid.data(), T, a.up.data());
    mark(kElementwise);
    k_->activation_forward(swiglu(), a.up.data(), dt_, l_.ffn, T, a.act.data());
    mark(kGemm);
    linear_fwd(dense_, w.mlp_down, a.act.data(), T, tmp_.data());
    tp_reduce(tmp_.data(), "mlp_out");
    mark(kElementwise);
    copy(my_rows(out), my_rows(a.x_mid), rows_ * h);
    k_->add(my_rows(out), my_rows(tmp_), dt_, rows_ * h);
  }

  bool swiglu() const { return m_.activation == Activation::swiglu; }

  void moe_forward(LayerActs& a, const LayerWeights& w, void* out) {
    const std::int64_t T = l_.tokens, h = m_.hidden, Tm = l_.moe_tokens, k = m_.moe->top_k;
    const std::int64_t E = m_.moe->experts, El = l_.local_experts, ep = o_.parallel.ep;
    const std::int64_t up = swiglu() ? 2 : 1, f = l_.expert_ffn;
    // Shared experts (tensor-parallel, all tokens) write the layer's MLP output; with TP the routed experts
    // run on this rank's 1/T token slice and add into it, and one TP all-reduce (sequence parallel: a
    // reduce-scatter, whose slices are exactly the routed slices) sums partials and slices.
    tp_gather(a.x_mid.data(), "mlp_in");
    mark(kGemm);
    if (l_.shared_ffn > 0) {
      linear_fwd(dense_, w.shared_up, a.x_mid.data(), T, a.up.data());
      mark(kElementwise);
      k_->activation_forward(swiglu(), a.up.data(), dt_, l_.shared_ffn, T, a.act.data());
      mark(kGemm);
      linear_fwd(dense_, w.shared_down, a.act.data(), T, tmp_.data());
    } else {
      mark(kElementwise);
      k_->scale(tmp_.data(), dt_, T * h, 0.0f);
    }
    const void* x = at(a.x_mid, coords_.t * Tm * h);
    mark(kGemm);
    linear_fwd(dense_, w.router, x, Tm, a.router_logits.data());
    mark(kMoeRouting);
    k_->route_topk(a.router_logits.data(), dt_, Tm, E, k, router_bias_.as<float>(), a.idx.as<std::int32_t>(),
                   a.weight.as<float>());
    std::vector<std::int64_t> counts(static_cast<std::size_t>(E));
    k_->build_permutation(a.idx.as<std::int32_t>(), Tm * k, E, a.counts.as<std::int64_t>(),
                          a.row_of_slot.as<std::int32_t>(), counts.data());
    for (std::int64_t e = 0; e < E; ++e) expert_tokens_[e] += static_cast<double>(counts[e]);
    k_->permute(x, dt_, Tm, k, h, a.row_of_slot.as<std::int32_t>(), nullptr, perm_.data());

    // Dispatch: rows per (peer, local expert) to every EP peer, then the token rows.
    a.send_rows.assign(static_cast<std::size_t>(ep), 0);
    for (std::int64_t e = 0; e < E; ++e) a.send_rows[e / El] += counts[e];
    a.recv_matrix = exchange_counts(counts);
    a.recv_rows.assign(static_cast<std::size_t>(ep), 0);
    a.expert_rows.assign(static_cast<std::size_t>(El), 0);
    for (std::int64_t s = 0; s < ep; ++s)
      for (std::int64_t e = 0; e < El; ++e) {
        a.recv_rows[s] += a.recv_matrix[s * El + e];
        a.expert_rows[e] += a.recv_matrix[s * El + e];
      }
    a.received = std::accumulate(a.recv_rows.begin(), a.recv_rows.end(), std::int64_t{0});
    sent_rows_ += Tm * k;
    received_rows_ += a.received;
    grow_experts(a, a.received);
    alltoallv(perm_.data(), a.send_rows, scratch_a_.data(), a.recv_rows, "ep_alltoallv/dispatch");
    mark(kMoeRouting);
    reorder(a, scratch_a_.data(), a.expert_in.data(), true);

    // Grouped expert GEMMs with the real per-expert row counts.
    mark(kGemm);
    expert_gemms_forward(a, w);
    mark(kMoeRouting);
    reorder(a, scratch_b_.data(), scratch_a_.data(), false);
    alltoallv(scratch_a_.data(), a.recv_rows, a.comb.data(), a.send_rows, "ep_alltoallv/combine");
    mark(kMoeRouting);
    k_->unpermute(a.comb.data(), dt_, Tm, k, h, a.row_of_slot.as<std::int32_t>(), a.weight.as<float>(),
                  at(tmp_, coords_.t * Tm * h), true);
    (void)up;
    (void)f;
    tp_reduce(tmp_.data(), "moe_out");
    mark(kElementwise);
    copy(my_rows(out), my_rows(a.x_mid), rows_ * h);
    k_->add(my_rows(out), my_rows(tmp_), dt_, rows_ * h);
  }

  void expert_gemms_forward(LayerActs& a, const LayerWeights& w) {
    const std::int64_t h = m_.hidden, up = swiglu() ? 2 : 1, f = l_.expert_ffn;
    std::int64_t row = 0;
    for (std::int64_t e = 0; e < l_.local_experts; ++e) {
      const std::int64_t n = a.expert_rows[e];
      linear_fwd(experts_, w.expert_up + 2 * e, at(a.expert_in, row * h), n, at(a.e_up, row * up * f));
      row += n;
    }
    mark(kElementwise);
    k_->activation_forward(swiglu(), a.e_up.data(), dt_, f, a.received, a.e_act.data());
    mark(kGemm);
    row = 0;
    for (std::int64_t e = 0; e < l_.local_experts; ++e) {
      const std::int64_t n = a.expert_rows[e];
      linear_fwd(experts_, w.expert_up + 2 * e + 1, at(a.e_act, row * f), n, at(scratch_b_, row * h));
      row += n;
    }
  }

  // Every rank tells each EP peer how many of its rows go to each of the peer's local experts.
  std::vector<std::int64_t> exchange_counts(const std::vector<std::int64_t>& counts) {
    const std::int64_t ep = o_.parallel.ep, El = l_.local_experts;
    std::vector<std::int32_t> send(static_cast<std::size_t>(ep * El)), recv(send.size());
    for (std::size_t e = 0; e < counts.size(); ++e) send[e] = static_cast<std::int32_t>(counts[e]);
    if (ep == 1) {
      recv = send;
    } else {
      mark(kEpComm);
      backend_.copy_to_device(counts_dev_, send.data(), send.size() * 4);
      ep_->alltoall(counts_dev_.data(), static_cast<char*>(counts_dev_.data()) + send.size() * 4,
                    static_cast<std::size_t>(El), DType::int32);
      backend_.copy_to_host(recv.data(), counts_dev_, recv.size() * 4, send.size() * 4);
    }
    return {recv.begin(), recv.end()};
  }

  void alltoallv(const void* send, const std::vector<std::int64_t>& send_rows, void* recv,
                 const std::vector<std::int64_t>& recv_rows, const char* name) {
    const std::int64_t h = m_.hidden;
    mark(kEpComm);
    if (o_.parallel.ep == 1) {
      copy(recv, send, send_rows[0] * h);
      return;
    }
    std::vector<std::size_t> sc(send_rows.size()), sd(send_rows.size()), rc(recv_rows.size()),
        rd(recv_rows.size());
    std::size_t so = 0, ro = 0;
    for (std::size_t p = 0; p < send_rows.size(); ++p) {
      sc[p] = static_cast<std::size_t>(send_rows[p] * h);
      sd[p] = so;
      so += sc[p];
      rc[p] = static_cast<std::size_t>(recv_rows[p] * h);
      rd[p] = ro;
      ro += rc[p];
    }
    ep_->alltoallv(send, sc, sd, recv, rc, rd, dt_);
    coll_bytes_[name] += static_cast<double>(so * e_);
  }

  // Received rows are grouped by source peer, then local expert; the expert GEMMs need them grouped by
  // expert. to_expert = true: peer-major → expert-major; false: back.
  void reorder(const LayerActs& a, const void* src, void* dst, bool to_expert) {
    const std::int64_t ep = o_.parallel.ep, El = l_.local_experts;
    std::vector<std::int64_t> peer_major(static_cast<std::size_t>(ep * El)), expert_major(peer_major.size());
    std::int64_t off = 0;
    for (std::int64_t s = 0; s < ep; ++s)
      for (std::int64_t e = 0; e < El; ++e) {
        peer_major[s * El + e] = off;
        off += a.recv_matrix[s * El + e];
      }
    off = 0;
    for (std::int64_t e = 0; e < El; ++e)
      for (std::int64_t s = 0; s < ep; ++s) {
        expert_major[s * El + e] = off;
        off += a.recv_matrix[s * El + e];
      }
    k_->copy_row_blocks(src, dst, dt_, m_.hidden, ep * El,
                        to_expert ? peer_major.data() : expert_major.data(),
                        to_expert ? expert_major.data() : peer_major.data(), a.recv_matrix.data());
  }

  double logits_and_loss() {
    const std::int64_t T = l_.tokens, V = l_.vocab;
    tp_gather(x_out_.data(), "logits_in");
    mark(kGemm);
    linear_fwd(dense_, logits_w_, x_out_.data(), T, logits_.data());
    mark(kElementwise);
    // Synthetic loss: mean square of this rank's logits (a deterministic function of weights and data);
    // its gradient, scaled, starts the backward pass.
    const double loss = k_->sum_squares(logits_.data(), dt_, T * V) / static_cast<double>(T * V);
    k_->scale(logits_.data(), dt_, T * V, 2.0f / static_cast<float>(T));
    return loss;
  }

  // --- backward --------------------------------------------------------------------------------------------
  // One micro-batch back through this stage's layers. g_a holds the gradient w.r.t. the stage output (the
  // last stage: from the output layer; others: received from the next stage) and ends holding the gradient
  // w.r.t. the stage input (this rank's rows).
  void backward(std::int64_t micro_batch, bool last_micro) {
    const std::int64_t T = l_.tokens;
    auto& acts = slot(micro_batch);
    if (last_stage_) {
      // dx_out (g_a) = logits dgrad; wgrad of the output layer.
      mark(kGemm);
      linear_dgrad(dense_, logits_w_, logits_.data(), T, g_a_.data());
      linear_wgrad(dense_, logits_w_, x_out_.data(), logits_.data(), T);
      tp_reduce(g_a_.data(), "logits_dgrad");
      if (last_micro) bucket_ready(static_cast<std::int64_t>(layers_.size()));
    }
    for (std::size_t i = layers_.size(); i-- > 0;) {
      // g_a: gradient w.r.t. the layer output. MLP part → g_b (gradient w.r.t. x_mid, residual added).
      if (layers_[i].moe)
        moe_backward(acts[i], layers_[i]);
      else
        mlp_backward(acts[i], layers_[i]);
      attention_backward(acts[i], layers_[i]);  // g_b → g_a (gradient w.r.t. x_in)
      if (last_micro) bucket_ready(static_cast<std::int64_t>(i));
    }
  }

  void mlp_backward(LayerActs& a, const LayerWeights& w) {
    const std::int64_t T = l_.tokens, h = m_.hidden;
    tp_gather(g_a_.data(), "layer_out_grad");
    mark(kGemm);
    linear_dgrad(dense_, w.mlp_down, g_a_.data(), T, g_c_.data());  // d act
    linear_wgrad(dense_, w.mlp_down, a.act.data(), g_a_.data(), T);
    mark(kElementwise);
    k_->activation_backward(swiglu(), a.up.data(), g_c_.data(), dt_, l_.ffn, T,
                            a.up.data());  // d up in place
    mark(kGemm);
    linear_dgrad(dense_, w.mlp_up, a.up.data(), T, g_b_.data());
    linear_wgrad(dense_, w.mlp_up, a.x_mid.data(), a.up.data(), T);
    tp_reduce(g_b_.data(), "mlp_dgrad");
    mark(kElementwise);
    k_->add(my_rows(g_b_), my_rows(g_a_), dt_, rows_ * h);
  }

  void moe_backward(LayerActs& a, const LayerWeights& w) {
    const std::int64_t T = l_.tokens, h = m_.hidden, Tm = l_.moe_tokens, k = m_.moe->top_k;
    const std::int64_t E = m_.moe->experts, up = swiglu() ? 2 : 1, f = l_.expert_ffn;
    tp_gather(g_a_.data(), "layer_out_grad");
    // Shared experts: d x_mid partial into g_b.
    if (l_.shared_ffn > 0) {
      mark(kGemm);
      linear_dgrad(dense_, w.shared_down, g_a_.data(), T, g_c_.data());
      linear_wgrad(dense_, w.shared_down, a.act.data(), g_a_.data(), T);
      mark(kElementwise);
      k_->activation_backward(swiglu(), a.up.data(), g_c_.data(), dt_, l_.shared_ffn, T, a.up.data());
      mark(kGemm);
      linear_dgrad(dense_, w.shared_up, a.up.data(), T, g_b_.data());
      linear_wgrad(dense_, w.shared_up, a.x_mid.data(), a.up.data(), T);
    } else {
      mark(kElementwise);
      k_->scale(g_b_.data(), dt_, T * h, 0.0f);
    }
    // Routed experts on this rank's token slice: mirror of the forward.
    const void* dy = at(g_a_, coords_.t * Tm * h);
    mark(kMoeRouting);
    k_->routing_weight_grad(dy, a.comb.data(), dt_, Tm, k, h, a.row_of_slot.as<std::int32_t>(),
                            d_weight_.as<float>());
    k_->permute(dy, dt_, Tm, k, h, a.row_of_slot.as<std::int32_t>(), a.weight.as<float>(), perm_.data());
    alltoallv(perm_.data(), a.send_rows, scratch_a_.data(), a.recv_rows, "ep_alltoallv/combine_grad");
    mark(kMoeRouting);
    reorder(a, scratch_a_.data(), scratch_b_.data(), true);  // d expert output, expert-major
    mark(kGemm);
    std::int64_t row = 0;
    for (std::int64_t e = 0; e < l_.local_experts; ++e) {
      const std::int64_t n = a.expert_rows[e];
      const std::int64_t t_down = w.expert_up + 2 * e + 1;
      linear_dgrad(experts_, t_down, at(scratch_b_, row * h), n, at(scratch_a_, row * f));
      linear_wgrad(experts_, t_down, at(a.e_act, row * f), at(scratch_b_, row * h), n);
      row += n;
    }
    mark(kElementwise);
    k_->activation_backward(swiglu(), a.e_up.data(), scratch_a_.data(), dt_, f, a.received, a.e_up.data());
    mark(kGemm);
    row = 0;
    for (std::int64_t e = 0; e < l_.local_experts; ++e) {
      const std::int64_t n = a.expert_rows[e];
      const std::int64_t t_up = w.expert_up + 2 * e;
      linear_dgrad(experts_, t_up, at(a.e_up, row * up * f), n, at(scratch_a_, row * h));
      linear_wgrad(experts_, t_up, at(a.expert_in, row * h), at(a.e_up, row * up * f), n);
      row += n;
    }
    mark(kMoeRouting);
    reorder(a, scratch_a_.data(), scratch_b_.data(), false);
    alltoallv(scratch_b_.data(), a.recv_rows, perm_.data(), a.send_rows, "ep_alltoallv/dispatch_grad");
    mark(kMoeRouting);
    void* dx = at(g_b_, coords_.t * Tm * h);
    k_->unpermute(perm_.data(), dt_, Tm, k, h, a.row_of_slot.as<std::int32_t>(), nullptr, dx, true);
    k_->topk_softmax_backward(a.idx.as<std::int32_t>(), a.weight.as<float>(), d_weight_.as<float>(), Tm, E, k,
                              d_router_.data(), dt_);
    mark(kGemm);
    linear_dgrad(dense_, w.router, d_router_.data(), Tm, dx, 1.0);
    linear_wgrad(dense_, w.router, at(a.x_mid, coords_.t * Tm * h), d_router_.data(), Tm);
    tp_reduce(g_b_.data(), "moe_dgrad");
    mark(kElementwise);
    k_->add(my_rows(g_b_), my_rows(g_a_), dt_, rows_ * h);
  }

  void attention_backward(LayerActs& a, const LayerWeights& w) {
    const std::int64_t T = l_.tokens, h = m_.hidden, W = l_.qkv_width, hd = l_.heads * l_.v_head_dim;
    // g_b = d x_mid. Output projection: d ctx_t (T×hd, in g_c) and its weight gradient.
    tp_gather(g_b_.data(), "attn_out_grad");
    mark(kGemm);
    gemm(T, hd, h, true, true, g_b_.data(), h, weight(dense_, w.attn_out), hd, g_c_.data(), T, 0.0);
    gemm(hd, h, T, true, true, a.ctx_t.data(), T, g_b_.data(), h, wgrad_ptr(dense_, w.attn_out), hd, 1.0);
    // Core: d qkv_t (T×W) into g_a (free now: x_mid's gradient is in g_b).
    mark(kAttention);
    k_->scale(g_a_.data(), dt_, T * W, 0.0f);
    attention_core_backward(a, g_c_.data(), g_a_.data());
    if (m_.mla) {
      mla_backward(a, w);  // d x_in into g_c, exact on every TP rank
    } else {
      mark(kGemm);
      // QKV: dX = W·dqkv (h×T) into g_c, dW += X·dqkv_t.
      gemm(h, T, W, false, true, weight(dense_, w.qkv), h, g_a_.data(), T, g_c_.data(), h, 0.0);
      gemm(h, W, T, false, false, a.x_in.data(), h, g_a_.data(), T, wgrad_ptr(dense_, w.qkv), h, 1.0);
      tp_reduce(g_c_.data(), "qkv_dgrad");
    }
    mark(kElementwise);
    // d x_in = d x_mid (residual) + d attention input, into g_a for the next (earlier) layer.
    copy(my_rows(g_a_), my_rows(g_b_), rows_ * h);
    k_->add(my_rows(g_a_), my_rows(g_c_), dt_, rows_ * h);
  }

  // MLA backward from d qkv_t (g_a: dQ, dK, dV): kv_up's output gradient [dV | d k_nope], the shared rope
  // half's gradient summed over heads, the up projections' dgrad/wgrad into the latent gradient, one TP
  // all-reduce of it (the up projections are column-parallel), then the replicated down projections give the
  // full d x_in on every rank (g_c); with q_lora_rank 0 the query projection's part is partial and
  // TP-reduced.
  void mla_backward(LayerActs& a, const LayerWeights& w) {
    const auto& c = *m_.mla;
    const std::int64_t T = l_.tokens, h = m_.hidden, nh = l_.heads, dq = l_.head_dim, dv = l_.v_head_dim;
    const std::int64_t ql = c.q_lora_rank, kvl = c.kv_lora_rank, rope = c.qk_rope_head_dim;
    const std::int64_t nope = c.qk_nope_head_dim, v_col = 2 * nh * dq, C = l_.mla_latent;
    void* dqkv = g_a_.data();
    mark(kElementwise);
    copy_columns(dqkv, dqkv, mla_.k_nope, mla_.nope_staged, mla_.nope_cols);
    void* d_rope = at(dlat_, (ql + kvl) * T);
    k_->scale(d_rope, dt_, T * rope, 0.0f);
    for (std::int64_t j = 0; j < nh; ++j)
      k_->add(d_rope, at(dqkv, (nh * dq + j * dq + nope) * T), dt_, T * rope);
    mark(kGemm);
    const std::int64_t kv_out = nh * (dv + nope);
    gemm(T, kvl, kv_out, false, true, at(dqkv, v_col * T), T, weight(dense_, w.kv_up), kvl, at(dlat_, ql * T),
         T, 0.0);
    gemm(kvl, kv_out, T, true, false, at(a.latent, ql * T), T, at(dqkv, v_col * T), T,
         wgrad_ptr(dense_, w.kv_up), kvl, 1.0);
    if (ql > 0) {
      gemm(T, ql, nh * dq, false, true, dqkv, T, weight(dense_, w.q_up), ql, dlat_.data(), T, 0.0);
      gemm(ql, nh * dq, T, true, false, a.latent.data(), T, dqkv, T, wgrad_ptr(dense_, w.q_up), ql, 1.0);
    }
    if (o_.parallel.tp > 1) {
      mark(kTpComm);
      tp_->allreduce(dlat_.data(), dlat_.data(), static_cast<std::size_t>(T * C), dt_, ReduceOp::sum);
      coll_bytes_["tp_allreduce/mla_latent_grad"] += static_cast<double>(T * C * elem());
    }
    mark(kGemm);
    if (ql > 0) {
      gemm(h, T, ql, false, true, weight(dense_, w.q_down), h, dlat_.data(), T, g_c_.data(), h, 0.0);
      gemm(h, ql, T, false, false, a.x_in.data(), h, dlat_.data(), T, wgrad_ptr(dense_, w.q_down), h, 1.0);
    }
    gemm(h, T, kvl + rope, false, true, weight(dense_, w.kv_down), h, at(dlat_, ql * T), T, g_c_.data(), h,
         ql > 0 ? 1.0 : 0.0);
    gemm(h, kvl + rope, T, false, false, a.x_in.data(), h, at(dlat_, ql * T), T, wgrad_ptr(dense_, w.kv_down),
         h, 1.0);
    if (ql == 0) {
      gemm(h, T, nh * dq, false, true, weight(dense_, w.q), h, dqkv, T, tmp_.data(), h, 0.0);
      gemm(h, nh * dq, T, false, false, a.x_in.data(), h, dqkv, T, wgrad_ptr(dense_, w.q), h, 1.0);
      tp_reduce(tmp_.data(), "q_dgrad");
      mark(kElementwise);
      k_->add(my_rows(g_c_), my_rows(tmp_), dt_, rows_ * h);
    }
  }

  void attention_core_backward(LayerActs& a, const void* dctx, void* dqkv) {
    const std::int64_t T = l_.tokens, d = l_.head_dim, dv = l_.v_head_dim, B = l_.attn_block, nb = l_.seq / B;
    const std::int64_t G = l_.kv_heads, hpg = l_.heads / G;
    const std::int64_t k_col = l_.heads * d, v_col = k_col + G * d;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const auto cat = [](const void* p, std::int64_t off, std::size_t e) {
      return static_cast<const char*>(p) + off * static_cast<std::int64_t>(e);
    };
    for (std::int64_t s = 0; s < plan_.shape.micro_batch; ++s) {
      const std::int64_t t0 = s * l_.seq;
      for (std::int64_t i = 0; i < nb; ++i) {
        const auto [keys, off] = strip(i);
        const std::int64_t sz = keys * B;
        for (std::int64_t j = 0; j < hpg; ++j) {
          const void* P = at(a.probs, s * probs_per_seq_ + off + j * G * sz);
          const void* dO = cat(dctx, j * dv * T + t0 + i * B, e_);
          const void* V = at(a.qkv_t, v_col * T + t0);
          void* dP = at(dprobs_, j * G * sz);
          // dP = V·dOᵀ (keys×B); dV += P·dO (keys×dv).
          gemm(keys, B, dv, false, true, V, T, dO, T, dP, keys, 0.0, G, dv * T, hpg * dv * T, sz);
          gemm(keys, dv, B, false, false, P, keys, dO, T, at(dqkv, v_col * T + t0), T, 1.0, G, sz,
               hpg * dv * T, dv * T);
        }
        k_->softmax_backward(at(a.probs, s * probs_per_seq_ + off), dprobs_.data(), dt_, keys, B, l_.heads,
                             sz, scale);
        for (std::int64_t j = 0; j < hpg; ++j) {
          const void* dS = at(dprobs_, j * G * sz);
          const void* K = at(a.qkv_t, k_col * T + t0);
          const void* Q = at(a.qkv_t, j * d * T + t0 + i * B);
          // dQ = dSᵀ·K (B×d); dK += dS·Q (keys×d).
          gemm(B, d, keys, true, false, dS, keys, K, T, at(dqkv, j * d * T + t0 + i * B), T, 0.0, G, sz,
               d * T, hpg * d * T);
          gemm(keys, d, B, false, false, dS, keys, Q, T, at(dqkv, k_col * T + t0), T, 1.0, G, sz, hpg * d * T,
               d * T);
        }
      }
    }
  }

  // --- data-parallel gradient reduction -------------------------------------------------------------------
  // Buckets of --bucket-layers layers (the output layer is its own bucket), reduced as soon as the last
  // micro-batch's backward has produced them; with --overlap without waiting (non-blocking).
  void bucket_ready(std::int64_t layer) {
    const std::int64_t n_layers = static_cast<std::int64_t>(layers_.size());
    if (layer < n_layers && layer % o_.bucket_layers != 0) return;  // bucket completes at its first layer
    const std::int64_t end_layer =
        layer == n_layers ? n_layers + 1 : std::min(layer + o_.bucket_layers, n_layers);
    reduce_range(dense_, dp_.get(), o_.parallel.dp, dense_.layer_begin[layer], dense_.layer_begin[end_layer],
                 "dp_allreduce/grads");
    if (experts_.count && layer < n_layers)
      reduce_range(experts_, edp_.get(), edp_->size(), experts_.layer_begin[layer],
                   experts_.layer_begin[std::min(end_layer, n_layers)], "edp_allreduce/expert_grads");
  }
  void reduce_range(Region& r, Communicator* comm, std::int64_t size, std::int64_t begin, std::int64_t end,
                    const char* name) {
    if (size <= 1 || end <= begin) return;
    mark(kDpComm);
    void* p = at(r.grad, begin);
    coll_bytes_[name] += static_cast<double>((end - begin) * static_cast<std::int64_t>(e_));
    if (o_.overlap)
      pending_.push_back(
          comm->start_allreduce(p, p, static_cast<std::size_t>(end - begin), dt_, ReduceOp::sum));
    else
      comm->allreduce(p, p, static_cast<std::size_t>(end - begin), dt_, ReduceOp::sum);
  }
  void finish_gradient_reduction() {
    mark(kDpComm);
    for (auto& r : pending_) r->wait();
    pending_.clear();
  }

  double gradient_sum_squares() {
    mark(kOptimizer);
    // DP replicas hold the same reduced gradients: count each once in the world-wide sum.
    double s = k_->sum_squares(dense_.grad.data(), dt_, dense_.count) / static_cast<double>(o_.parallel.dp);
    if (experts_.count) s += k_->sum_squares(experts_.grad.data(), dt_, experts_.count) / edp_->size();
    return s;
  }

  void optimizer(std::int64_t step_number) {
    mark(kOptimizer);
    kernels::AdamParams p;
    p.lr = o_.learning_rate;
    p.step = step_number;
    // Gradients are sums over micro-batches and DP replicas: average them.
    for (auto [r, replicas] :
         {std::pair{&dense_, static_cast<double>(o_.parallel.dp)},
          std::pair{&experts_, experts_.count ? static_cast<double>(edp_->size()) : 1.0}}) {
      if (r->count == 0) continue;
      p.grad_scale = static_cast<float>(1.0 / (replicas * static_cast<double>(plan_.shape.grad_accum)));
      k_->adam_update(r->param.data(), r->grad.data(), dt_, r->master.as<float>(), r->m.as<float>(),
                      r->v.as<float>(), r->count, p);
    }
  }

  const TrainOptions& o_;
  const TrainPlan& plan_;
  const ModelConfig& m_;
  const LocalDims& l_;
  MpiContext& mpi_;
  Backend& backend_;
  DType dt_;
  std::size_t e_ = 4;
  RankCoords coords_;
  std::unique_ptr<kernels::GemmEngine> gemm_;
  std::unique_ptr<kernels::TrainKernels> k_;
  std::unique_ptr<Communicator> world_, tp_, dp_, ep_, edp_;
  std::unique_ptr<Communicator> prev_, next_;  // pipeline: pairs with the previous / next stage
  bool first_stage_ = true, last_stage_ = true, sp_ = false;
  std::int64_t first_layer_ = 0;  // global index of this stage's first layer
  std::int64_t slots_ = 1;        // micro-batches in flight (activation sets)
  std::int64_t rows_ = 0,
               row0_ = 0;  // residual-stream rows this rank holds, and the first (sequence parallel)
  std::vector<PipeOp> schedule_;
  struct MlaColumns {
    std::vector<std::int64_t> k_nope, nope_staged, nope_cols, k_rope, rope_latent, rope_cols;
  } mla_;
  DeviceBuffer dlat_;  // MLA latent gradient
  Region dense_, experts_;
  std::int64_t logits_w_ = -1;
  std::vector<LayerWeights> layers_;
  std::vector<std::vector<LayerActs>> acts_;  // [slot][layer]
  std::int64_t probs_per_seq_ = 0;
  DeviceBuffer input_, x_out_, logits_, tmp_, g_a_, g_b_, g_c_, dprobs_;
  DeviceBuffer perm_, d_weight_, d_router_, router_bias_, counts_dev_, scratch_a_, scratch_b_;
  std::int64_t scratch_rows_ = 0;
  std::int64_t one_ = 1;
  std::uint64_t allocated_ = 0;
  std::vector<std::unique_ptr<CollectiveRequest>> pending_;
  bool poison_ = false, profile_ = false;
  std::array<double, kCats> cat_{};
  Cat current_ = kElementwise;
  Clock::time_point mark_start_;
  std::int64_t sent_rows_ = 0, received_rows_ = 0;
  std::vector<double> expert_tokens_;
  std::map<std::string, double> coll_bytes_;
};

std::uint16_t Trainer::float_to_bf16_bits(float v) {
  return fb::float_to_bf16(v);
}

}  // namespace

TrainRun run_training(const TrainOptions& o, MpiContext& mpi, Backend& backend, TrainHooks* hooks) {
  return run_training(o, prepare_training(o, mpi.size()), mpi, backend, hooks);
}

TrainRun run_training(const TrainOptions& o, TrainPlan prepared, MpiContext& mpi, Backend& backend,
                      TrainHooks* hooks) {
  TrainRun run;
  run.plan = std::move(prepared);
  const auto& plan = run.plan;
  if (plan.shape.distributed_optimizer)
    throw unsupported_error(
        "--distributed-optimizer is not implemented in the train step yet; --dry-run shows the "
        "plan");
  if (backend.kind() == BackendKind::host && plan.shape.dtype != DType::fp32 &&
      plan.shape.dtype != DType::bf16)
    throw unsupported_error(
        fmt::format("--dtype {} on the host backend: use fp32 or bf16", to_string(plan.shape.dtype)));
  if (plan.shape.dtype != DType::fp32 && plan.shape.dtype != DType::bf16)
    throw unsupported_error(
        fmt::format("--dtype {}: the train step runs fp32 or bf16", to_string(plan.shape.dtype)));
  const auto reason = kernels::gemm_unsupported_reason(backend.kind(), plan.shape.dtype);
  if (!reason.empty()) throw unsupported_error(reason);
  // Fit check on every rank, agreed, before allocating.
  const std::uint64_t available = backend.free_memory_bytes();
  const bool fits = plan.memory.total() <= available;
  if (!mpi.all_true(fits)) {
    std::uint64_t smallest = available;
    FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_UINT64_T, MPI_MIN, mpi.world()));
    check_fits(plan.memory, smallest, plan.model, plan.parallel, plan.shape);
  }

  Trainer trainer(o, plan, mpi, backend);
  run.gemm_engine = trainer.engine_name();
  run.gemm_emulated = trainer.emulated();
  std::int64_t first = hooks ? hooks->on_start(trainer) : 0;
  run.first_step = first + 1;
  std::vector<double> local_seconds;
  std::vector<std::array<double, kCats>> cats;
  std::map<std::string, double> bytes;
  std::int64_t step = first;
  const bool host = backend.kind() == BackendKind::host;
  for (std::int64_t n = 0; step < o.steps; ++n) {
    ++step;
    if (hooks) hooks->before_step(step);
    const bool measured = n >= o.warmup_steps;
    // Host: every step is profiled (synchronisation is free). cuda: only the last warm-up step is, so the
    // measured steps run without extra synchronisation.
    const bool profile = host || (!measured && n + 1 == o.warmup_steps) || (o.warmup_steps == 0 && n == 0);
    const auto s = trainer.step(step, profile);
    auto step_bytes = trainer.take_collective_bytes();
    double slowest = s.seconds;
    FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, mpi.world()));
    if (measured) {
      run.step_seconds.push_back(slowest);
      if (host) cats.push_back(s.cat);
      bytes = step_bytes;
    }
    if (profile && !host) cats.assign(1, s.cat);
    run.loss = s.loss;
    run.grad_norm = s.grad_norm;
    run.last_step = step;
    ++run.steps_run;
    StepOutcome out;
    out.seconds = s.seconds;
    out.slowest_rank_seconds = slowest;
    out.compute_seconds = s.cat[kGemm] + s.cat[kAttention] + s.cat[kElementwise] + s.cat[kMoeRouting];
    out.loss = s.loss;
    out.grad_norm = s.grad_norm;
    out.local_finite = s.local_finite;
    if (hooks && !hooks->after_step(step, out)) break;
  }
  if (hooks) hooks->on_finish(run.last_step);
  for (int c = 0; c < kCats; ++c) {
    std::vector<double> v;
    for (const auto& a : cats) v.push_back(a[c]);
    run.breakdown_seconds[kCatNames[c]] = v.empty() ? 0.0 : summarize(v).median;
  }
  run.collective_bytes = bytes;
  // Every rank's progress, so a report shows whether all ranks ran the same steps.
  const double mine[2] = {static_cast<double>(run.steps_run), static_cast<double>(run.last_step)};
  std::vector<double> all(2 * static_cast<std::size_t>(mpi.size()));
  FB_CHECK_MPI(MPI_Allgather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, mpi.world()));
  for (int i = 0; i < mpi.size(); ++i) {
    run.per_rank_steps.push_back(all[2 * i]);
    run.per_rank_last_step.push_back(all[2 * i + 1]);
  }
  // Agreed counters over all ranks.
  std::uint64_t alloc = trainer.allocated();
  FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &alloc, 1, MPI_UINT64_T, MPI_MAX, mpi.world()));
  run.allocated_bytes = alloc;
  std::int64_t rows[2] = {trainer.sent_rows(), trainer.received_rows()};
  FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, rows, 2, MPI_INT64_T, MPI_SUM, mpi.world()));
  run.dispatch_sent_rows = rows[0];
  run.dispatch_received_rows = rows[1];
  if (plan.model.moe) {
    // Tokens per expert summed over the ranks that route them (each TP rank routes its own slice).
    std::vector<double> tokens = trainer.expert_tokens();
    FB_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, tokens.data(), static_cast<int>(tokens.size()), MPI_DOUBLE,
                               MPI_SUM, mpi.world()));
    const double mean =
        std::accumulate(tokens.begin(), tokens.end(), 0.0) / static_cast<double>(tokens.size());
    run.moe_imbalance = mean > 0 ? *std::max_element(tokens.begin(), tokens.end()) / mean : 0.0;
  }
  return run;
}

reports::Result train_result(const TrainOptions& o, const TrainPlan& plan, const TrainRun* run,
                             const DevicePeak& peak, std::int64_t world) {
  using reports::Better;
  reports::Result r;
  r.benchmark = "train";
  const auto& c = plan.parallel;
  r.name = fmt::format("{}{}/tp{}-dp{}-ep{}-pp{}{}/{}/seq{}-mb{}-ga{}", plan.model.name,
                       o.layers > 0 ? fmt::format("-{}layers", plan.model.layers) : std::string(), c.tp, c.dp,
                       c.ep, c.pp, plan.shape.sequence_parallel ? "-sp" : "", to_string(plan.shape.dtype),
                       plan.local.seq, plan.shape.micro_batch, plan.shape.grad_accum);
  r.params = {{"model", plan.model.name},
              {"model_file", plan.model.file},
              {"layers", plan.model.layers},
              {"layers_note",
               o.layers > 0 ? "only --layers layers are instantiated; FLOPs, parameters and MFU are for "
                              "the model that runs"
                            : "all layers"},
              {"tp", c.tp},
              {"dp", c.dp},
              {"ep", c.ep},
              {"pp", c.pp},
              {"sequence_parallel", plan.shape.sequence_parallel},
              {"attention", plan.model.mla ? "mla" : "mha"},
              {"seq", plan.local.seq},
              {"micro_batch", plan.shape.micro_batch},
              {"grad_accum", plan.shape.grad_accum},
              {"dtype", std::string(to_string(plan.shape.dtype))},
              {"attention_flops", std::string(to_string(plan.shape.attention))},
              {"recompute", std::string(to_string(plan.shape.recompute))},
              {"distributed_optimizer", plan.shape.distributed_optimizer},
              {"overlap", o.overlap},
              {"bucket_layers", o.bucket_layers},
              {"learning_rate", o.learning_rate},
              {"routing_skew", o.routing_skew},
              {"steps", o.steps},
              {"warmup_steps", o.warmup_steps},
              {"dry_run", run == nullptr}};
  const auto metric = [&](const std::string& name, double v, const char* unit, Better b) {
    r.set_metric(name, {v, unit, b, std::nullopt});
  };
  metric("flops_per_token", plan.flops.total(), "FLOP", Better::none);
  metric("flops_per_step", plan.flops_per_step, "FLOP", Better::none);
  metric("params_total", plan.params.total, "count", Better::none);
  metric("params_active", plan.params.active, "count", Better::none);
  metric("memory_bytes_per_rank", static_cast<double>(plan.memory.total()), "B", Better::lower);
  const auto& f = plan.flops;
  r.extra["flops_per_token"] = {{"attention_projections", f.attention_projections},
                                {"attention_core", f.attention_core},
                                {"mlp_dense", f.mlp_dense},
                                {"moe_routed", f.moe_routed},
                                {"moe_shared", f.moe_shared},
                                {"mtp_projection", f.mtp_projection},
                                {"logits", f.logits},
                                {"hardware", plan.hardware_flops_per_token}};
  r.extra["memory_estimate_bytes"] = {
      {"weights", plan.memory.weights},     {"gradients", plan.memory.gradients},
      {"optimizer", plan.memory.optimizer}, {"activations", plan.memory.activations},
      {"workspace", plan.memory.workspace}, {"total", plan.memory.total()}};
  auto gemms = nlohmann::json::array();
  for (const auto& g : plan.gemms)
    gemms.push_back({{"name", g.gemm.name},
                     {"pass", g.gemm.pass},
                     {"m", g.gemm.problem.m},
                     {"n", g.gemm.problem.n},
                     {"k", g.gemm.problem.k},
                     {"batch", g.gemm.problem.batch},
                     {"transa", g.gemm.problem.transa},
                     {"transb", g.gemm.problem.transb},
                     {"calls_per_layer", g.calls_per_layer},
                     {"layers", g.layers},
                     {"note", g.note}});
  r.extra["gemms"] = gemms;
  auto colls = nlohmann::json::array();
  for (const auto& cp : plan.collectives)
    colls.push_back({{"name", cp.name},
                     {"group", cp.group},
                     {"op", cp.op},
                     {"group_size", cp.group_size},
                     {"bytes_per_call", cp.bytes_per_call},
                     {"calls_per_step", cp.calls_per_step},
                     {"bytes_per_step", cp.bytes_per_step()}});
  r.extra["collectives_plan"] = colls;
  if (c.pp > 1) {
    const double m = static_cast<double>(plan.shape.grad_accum), p = static_cast<double>(c.pp);
    r.extra["pipeline"] = {{"schedule", "1F1B"},
                           {"stages", c.pp},
                           {"layers_per_stage", plan.local.layers},
                           {"micro_batches", plan.shape.grad_accum},
                           {"ideal_bubble_fraction", (p - 1) / (m + p - 1)},
                           {"note",
                            "each stage runs min(P - stage - 1, micro-batches) warm-up forwards, then "
                            "one forward and one backward, then the remaining backwards; "
                            "pipeline_bubble in the breakdown is the time blocked in point-to-point "
                            "transfers"}};
  }
  if (!run) return r;

  const auto peak_tflops = peak.for_dtype(std::string(to_string(plan.shape.dtype)));
  const auto& st = run->step_seconds;
  const auto step_metric = reports::metric_from_samples(st, "s", Better::lower);
  r.set_metric("step_time_s", step_metric);
  const double t = step_metric.value;
  std::vector<double> tps, tflops, mfu, hfu;
  for (double s : st) {
    tps.push_back(plan.tokens_per_step / s);
    tflops.push_back(plan.flops_per_step / s / static_cast<double>(world) / 1e12);
    if (peak_tflops && *peak_tflops > 0) {
      mfu.push_back(std::min(1.0, tflops.back() / *peak_tflops));
      hfu.push_back(std::min(1.0, plan.hardware_flops_per_token * plan.tokens_per_step / s /
                                      static_cast<double>(world) / 1e12 / *peak_tflops));
    }
  }
  r.set_metric("tokens_per_s", reports::metric_from_samples(tps, "tokens/s", Better::higher));
  std::vector<double> per_gpu;
  for (double v : tps) per_gpu.push_back(v / static_cast<double>(world));
  r.set_metric("tokens_per_s_per_gpu", reports::metric_from_samples(per_gpu, "tokens/s", Better::higher));
  r.set_metric("model_tflops_per_gpu", reports::metric_from_samples(tflops, "TFLOP/s", Better::higher));
  if (!mfu.empty()) {
    r.set_metric("mfu", reports::metric_from_samples(mfu, "fraction", Better::higher));
    r.set_metric("hfu", reports::metric_from_samples(hfu, "fraction", Better::higher));
  }
  r.set_per_rank("steps_completed", run->per_rank_steps);
  r.set_per_rank("last_step", run->per_rank_last_step);
  metric("memory_allocated_bytes_per_rank", static_cast<double>(run->allocated_bytes), "B", Better::lower);
  metric("loss", run->loss, "value", Better::none);
  metric("grad_norm", run->grad_norm, "value", Better::none);
  metric("steps_completed", static_cast<double>(run->steps_run), "count", Better::none);
  if (plan.model.moe) metric("moe_load_imbalance", run->moe_imbalance, "ratio", Better::lower);
  r.extra["peak"] = {
      {"tflops", peak_tflops ? *peak_tflops : 0.0}, {"source", peak.source}, {"measured", peak.measured}};
  r.extra["breakdown"] = run->breakdown_seconds;
  double parts = 0;
  for (const auto& [k, v] : run->breakdown_seconds) parts += v;
  r.extra["breakdown_note"] = fmt::format(
      "seconds per step by category (median over measured steps{}); sum {:.6g} s vs step time {:.6g} s", "",
      parts, t);
  r.extra["collective_bytes_per_step"] = run->collective_bytes;
  r.extra["moe_dispatch"] = {{"rows_sent", run->dispatch_sent_rows},
                             {"rows_received", run->dispatch_received_rows}};
  r.extra["gemm_engine"] = run->gemm_engine;
  r.extra["gemm_emulated"] = run->gemm_emulated;
  r.extra["first_step"] = run->first_step;
  r.extra["last_step"] = run->last_step;
  r.extra["step_times_s"] = run->step_seconds;
  if (!peak_tflops) r.extra["mfu_note"] = "no peak known for this dtype: mfu/hfu omitted";
  if (!std::isfinite(run->loss))
    r.fail(fmt::format("loss is not finite ({}) at step {}", run->loss, run->last_step));
  return r;
}

}  // namespace fb::workloads
