#include "workloads/train_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <sstream>
#include <string>

#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "kernels/gemm_engine.hpp"
#include "workloads/train/trainer.hpp"

namespace fb::workloads {

TrainPlan prepare_training(const TrainOptions& o, std::int64_t world) {
  ModelConfig model = load_model(o.model);
  if (o.layers < 0) throw usage_error(fmt::format("invalid --layers {}: must be positive", o.layers));
  if (o.layers > 0) {
    if (o.layers > model.layers)
      throw usage_error(
          fmt::format("invalid --layers {}: {} has only {} layers", o.layers, model.name, model.layers));
    model.layers = o.layers;
    model.mtp_layers = 0;  // MTP layers are never instantiated: count only what runs
    // A prefix of a MoE model keeps at least one MoE layer (else it would measure a dense model): the
    // leading dense layers shrink to L - 1, and the report says so (params.layers_note).
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
  if (o.steps > 1'000'000'000)
    throw usage_error(fmt::format("invalid --steps {}: at most 1000000000", o.steps));
  positive("--bucket-layers", o.shape.bucket_layers);
  if (o.warmup_steps < 0 || o.warmup_steps >= o.steps)
    throw usage_error(
        fmt::format("invalid --warmup-steps {}: must be in [0, --steps {})", o.warmup_steps, o.steps));
  if (o.routing_skew < 0 || !std::isfinite(o.routing_skew))
    throw usage_error(fmt::format("invalid --routing-skew {}: must be a finite number >= 0", o.routing_skew));
  // Options that would change nothing are refused, as --ep on a dense model is: the report would carry a
  // setting that never acted (and, for --sequence-parallel, another result name for the same run).
  if (o.routing_skew > 0 && !model.moe)
    throw usage_error(fmt::format("--routing-skew {}: {} has no experts (dense model); it skews MoE routing",
                                  o.routing_skew, model.name));
  if (o.shape.sequence_parallel && o.parallel.tp == 1)
    throw usage_error("--sequence-parallel needs --tp > 1: it splits the tensor-parallel group's sequence");
  validate_layout(model, o.parallel, world);
  // Counted in doubles: the plan's integer token and FLOP counts must not overflow (2^31 x 2^31 micro-batches
  // planned -5e11 tokens), and a step of that size is a typo, not a test.
  const double tokens = static_cast<double>(sequence_length(model, o.shape.seq)) *
                        static_cast<double>(o.shape.micro_batch) * static_cast<double>(o.shape.grad_accum) *
                        static_cast<double>(std::max<std::int64_t>(o.parallel.dp, 1));
  if (tokens > 4294967296.0)
    throw usage_error(fmt::format(
        "--seq x --micro-batch x --grad-accum x --dp = {:.4g} tokens per step: at most 2^32 (the largest "
        "published global batches are about 16 M tokens)",
        tokens));
  auto plan = make_plan(model, o.parallel, o.shape);
  // Both act on the data-parallel gradient reduction: over DP, and for an MoE model's experts over
  // expert-DP (dp·tp/ep ranks hold the same experts). A layout with neither has nothing to overlap or shard.
  const auto& pc = plan.parallel;
  const bool dp_reduction = pc.dp > 1 || (model.moe && pc.expert_dp() > 1);
  const char* acting = o.overlap                       ? "--overlap"
                       : o.shape.distributed_optimizer ? "--distributed-optimizer"
                       : o.shape.bucket_layers != 1    ? "--bucket-layers"
                                                       : nullptr;
  if (!dp_reduction && acting)
    throw usage_error(
        fmt::format("{} needs a data-parallel gradient reduction (dp > 1{}): with dp 1 there is none to {}",
                    acting, model.moe ? ", or expert-DP dp x tp / ep > 1" : "",
                    o.overlap                       ? "overlap"
                    : o.shape.distributed_optimizer ? "shard"
                                                    : "bucket"));
  // Each TP rank routes (MoE) and, with sequence parallelism, holds 1/T of a micro-batch's tokens.
  if (plan.local.tokens % o.parallel.tp != 0)
    throw usage_error(fmt::format("{}--seq x --micro-batch = {} tokens is not divisible by --tp {}",
                                  o.shape.sequence_parallel ? "--sequence-parallel: " : "", plan.local.tokens,
                                  o.parallel.tp));
  return plan;
}

std::string train_dtype_unsupported(BackendKind kind, DType dtype) {
  if (dtype == DType::fp32 || dtype == DType::bf16) return {};
  if (kind == BackendKind::host)
    return fmt::format("--dtype {} on the host backend: use fp32 or bf16", to_string(dtype));
  return fmt::format("--dtype {}: the train step runs fp32 or bf16 (--dry-run plans {})", to_string(dtype),
                     to_string(dtype));
}

namespace {

// The attention engine for this run, the same on every rank: `auto` falls back to the blocked GEMMs
// everywhere when any rank cannot use the fused engine (with a one-line notice: a warning on cuda, where
// the fused engine was expected; debug detail on host); an explicit engine that one rank cannot honour
// stops every rank with the reason.
kernels::AttentionEngineSelection choose_attention(const TrainOptions& o, TrainPlan& plan, MpiContext& mpi,
                                                   Backend& backend) {
  const auto shape = train::attention_shape(plan);
  kernels::AttentionEngineSelection sel;
  std::string error;
  try {
    sel = kernels::make_attention_engine(backend, o.attention_engine, &shape, plan.shape.dtype);
  } catch (const Error& e) {
    error = e.what();
  }
  if (!mpi.all_true(error.empty()))
    throw unsupported_error(error.empty() ? fmt::format("--attention-engine {}: another rank cannot run it",
                                                        to_string(o.attention_engine))
                                          : error);
  if (!mpi.all_true(sel.fused != nullptr) && sel.fused) {
    sel = kernels::AttentionEngineSelection{
        "gemm", nullptr, "attention engine: gemm (another rank cannot use " + sel.engine + ")"};
  }
  if (!sel.notice.empty()) {
    if (backend.kind() == BackendKind::cuda)
      log::warn("{}", sel.notice);
    else
      log::debug("{}", sel.notice);
  }
  if (sel.fused) {  // the plan and memory estimate of the fused path: no probability blocks, no strip GEMMs
    auto shape_fused = plan.shape;
    shape_fused.fused_attention = true;
    plan = make_plan(plan.model, plan.parallel, shape_fused);
  }
  return sel;
}

// What the backend cannot run, before anything is built.
void check_supported(const TrainPlan& plan, Backend& backend) {
  if (const auto why = train_dtype_unsupported(backend.kind(), plan.shape.dtype); !why.empty())
    throw unsupported_error(why);
  const auto reason = kernels::gemm_unsupported_reason(backend.kind(), plan.shape.dtype);
  if (!reason.empty()) throw unsupported_error(reason);
}

// Whether the plan fits in every rank's memory (agreed), before anything is allocated.
void check_fits_everywhere(const TrainPlan& plan, MpiContext& mpi, Backend& backend, Communicator& control) {
  const std::uint64_t available = backend.free_memory_bytes();
  const bool fits = plan.memory.total() <= available;
  if (!mpi.all_true(fits)) {
    double smallest = static_cast<double>(available);  // bytes: exact in a double below 2^53
    control.allreduce(&smallest, &smallest, 1, DType::fp64, ReduceOp::min);
    check_fits(plan.memory, static_cast<std::uint64_t>(smallest), plan.model, plan.parallel, plan.shape);
  }
}

StepOutcome outcome_of(const train::StepStats& s, double slowest) {
  StepOutcome out;
  out.seconds = s.seconds;
  out.slowest_rank_seconds = slowest;
  out.compute_seconds = train::compute_seconds(s.cat);
  out.loss = s.loss;
  out.grad_norm = s.grad_norm;
  out.local_finite = s.local_finite;
  return out;
}

// Every rank's progress, so a report shows whether all ranks ran the same steps, and counters agreed over
// all ranks. Values travel as doubles: counts and bytes here are exact below 2^53.
void agree_counters(TrainRun& run, const train::Trainer& trainer, Communicator& control,
                    const TrainPlan& plan) {
  const int world = control.size();
  const double mine[2] = {static_cast<double>(run.steps_run), static_cast<double>(run.last_step)};
  std::vector<double> all(2 * static_cast<std::size_t>(world));
  control.allgather(mine, all.data(), 2, DType::fp64);
  for (int i = 0; i < world; ++i) {
    run.per_rank_steps.push_back(all[2 * i]);
    run.per_rank_last_step.push_back(all[2 * i + 1]);
  }
  double alloc = static_cast<double>(trainer.allocated());
  control.allreduce(&alloc, &alloc, 1, DType::fp64, ReduceOp::max);
  run.allocated_bytes = static_cast<std::uint64_t>(alloc);
  double rows[2] = {static_cast<double>(trainer.sent_rows()), static_cast<double>(trainer.received_rows())};
  control.allreduce(rows, rows, 2, DType::fp64, ReduceOp::sum);
  run.dispatch_sent_rows = static_cast<std::int64_t>(rows[0]);
  run.dispatch_received_rows = static_cast<std::int64_t>(rows[1]);
  if (plan.model.moe) {
    // Tokens per expert summed over the ranks that route them (each TP rank routes its own slice).
    std::vector<double> tokens = trainer.expert_tokens();
    control.allreduce(tokens.data(), tokens.data(), tokens.size(), DType::fp64, ReduceOp::sum);
    const double mean =
        std::accumulate(tokens.begin(), tokens.end(), 0.0) / static_cast<double>(tokens.size());
    run.moe_imbalance = mean > 0 ? *std::max_element(tokens.begin(), tokens.end()) / mean : 0.0;
  }
}

// The collective counts the report gives are one rank's of the last pipeline stage, the stage the plan's
// lists describe (it runs the output layer; the first stage the embedding): its lowest world rank's, sent to
// every rank as "name calls bytes" lines. Without PP that is rank 0, whose own counts stand.
void last_stage_collectives(TrainRun& run, const MpiContext& mpi, const TrainPlan& plan) {
  const auto& pc = plan.parallel;
  if (pc.pp <= 1) return;
  int root = 0;
  while (root < mpi.size() && rank_coords(root, pc).p != pc.pp - 1) ++root;
  if (root >= mpi.size()) return;
  std::string text;
  if (mpi.rank() == root)
    for (const auto& [name, bytes] : run.collective_bytes)
      text += fmt::format("{} {} {}\n", name, run.collective_calls[name], bytes);
  auto size = static_cast<std::int64_t>(text.size());
  broadcast(mpi, size, root);
  text.resize(static_cast<std::size_t>(size));
  broadcast(mpi, std::span<char>(text.data(), text.size()), root);
  run.collective_bytes.clear();
  run.collective_calls.clear();
  std::istringstream in(text);
  std::string name;
  double calls = 0, bytes = 0;
  while (in >> name >> calls >> bytes) {
    run.collective_calls[name] = calls;
    run.collective_bytes[name] = bytes;
  }
}

}  // namespace

std::map<std::string, double> median_breakdown(const std::vector<train::CatSeconds>& profiled) {
  std::map<std::string, double> out;
  const auto& names = train::breakdown_categories();
  for (int c = 0; c < train::kCats; ++c) {
    std::vector<double> v;
    v.reserve(profiled.size());
    for (const auto& a : profiled) v.push_back(a[c]);
    out[names[static_cast<std::size_t>(c)]] = v.empty() ? 0.0 : summarize(v).median;
  }
  return out;
}

TrainRun run_training(const TrainOptions& o, MpiContext& mpi, Backend& backend, TrainHooks* hooks) {
  return run_training(o, prepare_training(o, mpi.size()), mpi, backend, hooks);
}

TrainRun run_training(const TrainOptions& o, TrainPlan prepared, MpiContext& mpi, Backend& backend,
                      TrainHooks* hooks, const std::function<void(const TrainRun&)>& on_step) {
  TrainRun run;
  run.plan = std::move(prepared);
  const auto& plan = run.plan;
  auto control = make_host_communicator(mpi);
  check_supported(plan, backend);
  const auto attention = choose_attention(o, run.plan, mpi, backend);
  run.attention_engine = attention.engine;
  check_fits_everywhere(plan, mpi, backend, *control);

  train::Trainer trainer(o, plan, mpi, backend, *control, attention.fused.get());
  run.gemm_engine = trainer.engine_name();
  run.gemm_emulated = trainer.emulated();
  std::int64_t step = hooks ? hooks->on_start(trainer.state()) : 0;
  run.first_step = step + 1;
  auto& cats = run.profiled;
  const bool host = backend.kind() == BackendKind::host;
  ProgressMeter progress("train", static_cast<double>(o.steps - step));
  const std::int64_t begin = step;
  // The default warm-up leaves one measured step of those this run has left (a resume starts late);
  // one given is kept as given.
  const std::int64_t warmup_steps =
      o.warmup_default ? std::min(o.warmup_steps, std::max<std::int64_t>(o.steps - step - 1, 0))
                       : o.warmup_steps;
  run.warmup_steps = warmup_steps;
  for (std::int64_t n = 0; step < o.steps; ++n) {
    progress.update(static_cast<double>(step - begin),
                    fmt::format("step {}/{}, loss {:.4g}", step, o.steps, run.loss));
    ++step;
    if (hooks) hooks->before_step(step);
    const bool measured = n >= warmup_steps;
    // Host: every step is profiled (synchronisation is free). cuda: only the last warm-up step is, so the
    // measured steps run without extra synchronisation.
    const bool profile = host || (!measured && n + 1 == warmup_steps) || (warmup_steps == 0 && n == 0);
    const auto s = trainer.step(step, profile);
    auto step_collectives = trainer.take_collectives();
    double slowest = s.seconds;
    control->allreduce(&slowest, &slowest, 1, DType::fp64, ReduceOp::max);
    if (measured) {
      run.step_seconds.push_back(slowest);
      if (host) cats.push_back(s.cat);
      run.collective_bytes = std::move(step_collectives.bytes);
      run.collective_calls = std::move(step_collectives.calls);
    }
    if (profile && !host) cats.assign(1, s.cat);
    run.loss = s.loss;
    run.grad_norm = s.grad_norm;
    run.last_step = step;
    ++run.steps_run;
    if (on_step && measured) on_step(run);
    if (hooks && !hooks->after_step(step, outcome_of(s, slowest))) break;
  }
  // The step reached, not the last one run here: a relaunch that resumes from the final checkpoint runs no
  // step and has still reached the end (its supervisor reads this as the job finishing).
  if (hooks) hooks->on_finish(step);
  run.breakdown_seconds = median_breakdown(cats);
  agree_counters(run, trainer, *control, plan);
  last_stage_collectives(run, mpi, plan);
  return run;
}

}  // namespace fb::workloads
