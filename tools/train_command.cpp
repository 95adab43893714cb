// factorybench train: a transformer training step (dense or MoE, GQA or MLA attention) under a
// tensor/data/expert/pipeline-parallel layout (optionally sequence parallel), with Megatron-accurate model
// FLOPs and MFU. --dry-run prints the plan (parameters, FLOPs, memory, every
// GEMM and collective) without running.
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/cudnn_library.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/rank_collectives.hpp"
#include "core/units.hpp"
#include "reports/train_console.hpp"
#include "tools/commands.hpp"
#include "tools/count_option.hpp"
#include "tools/enum_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/resilience_options.hpp"
#include "tools/train_options.hpp"
#include "tools/train_so_far.hpp"
#include "workloads/run_environment.hpp"
#include "workloads/train/attention_core.hpp"
#include "workloads/train_step.hpp"

namespace fb::tools {
namespace {

struct TrainCommandOptions {
  TrainCliOptions train;
  bool dry_run = false;
  resilience::ResilienceOptions resilience;  // --run-dir, checkpoints, faults (tools/resilience_command.cpp)
  std::string state_bytes, mtbf;
};

// `engine_note`: what --dry-run adds when the engine is only chosen at run time (auto).
void print_plan(const workloads::TrainPlan& plan, std::uint64_t available,
                const std::string& engine_note = {}) {
  const auto& c = plan.parallel;
  const auto& s = plan.shape;
  std::cout << fmt::format(
      "model {}: {} layers, hidden {}, heads {}/{} kv, ffn {}{}, vocab {}\n", plan.model.name,
      plan.model.layers, plan.model.hidden, plan.model.heads, plan.model.kv_heads, plan.model.ffn,
      plan.model.moe ? fmt::format(", {} experts top-{}", plan.model.moe->experts, plan.model.moe->top_k)
                     : std::string(),
      plan.model.vocab);
  if (plan.model.mla)
    std::cout << fmt::format(
        "attention: MLA, q_lora_rank {}, kv_lora_rank {}, q/k head dim {} + {} (rope), v head dim {}\n",
        plan.model.mla->q_lora_rank, plan.model.mla->kv_lora_rank, plan.model.mla->qk_nope_head_dim,
        plan.model.mla->qk_rope_head_dim, plan.model.mla->v_head_dim);
  std::cout << fmt::format(
      "layout: tp {} x dp {} x pp {} = {} ranks, ep {}{}; {} seq {} x micro-batch {} x grad-accum {} "
      "= {} tokens/step\n",
      c.tp, c.dp, c.pp, c.world(), c.ep, s.sequence_parallel ? ", sequence parallel" : "", to_string(s.dtype),
      plan.local.seq, s.micro_batch, s.grad_accum, plan.tokens_per_step);
  if (c.pp > 1) {
    const double m = static_cast<double>(s.grad_accum), p = static_cast<double>(c.pp);
    std::cout << fmt::format(
        "pipeline: {} stages of {} layers, 1F1B over {} micro-batches (ideal bubble (P-1)/(M+P-1) = "
        "{:.1f}%{})\n",
        c.pp, plan.local.layers, s.grad_accum, 100 * (p - 1) / (m + p - 1),
        s.grad_accum < c.pp ? "; --grad-accum below --pp leaves stages idle" : "");
  }
  std::cout << fmt::format("parameters: {} total, {} active\n", format_si(plan.params.total, ""),
                           format_si(plan.params.active, ""));
  std::cout << fmt::format(
      "model FLOPs: {} per token ({} attention), {} per step; hardware {} per token "
      "(recompute {})\n",
      format_si(plan.flops.total(), "FLOP"), to_string(s.attention), format_si(plan.flops_per_step, "FLOP"),
      format_si(plan.hardware_flops_per_token, "FLOP"), to_string(s.recompute));
  std::cout << fmt::format("attention core: {}{}\n",
                           s.fused_attention ? "fused (one kernel per direction, log-sum-exp saved)"
                                             : "blocked GEMMs (probability blocks saved)",
                           engine_note.empty() ? "" : "; " + engine_note);
  const auto& m = plan.memory;
  std::cout << fmt::format(
      "memory per rank: {} (weights {}, gradients {}, optimizer {}, activations {}, workspace {})",
      format_bytes(m.total()), format_bytes(m.weights), format_bytes(m.gradients), format_bytes(m.optimizer),
      format_bytes(m.activations), format_bytes(m.workspace));
  if (available > 0)
    std::cout << fmt::format("; {} here: {}", format_bytes(available),
                             m.total() <= available ? "fits" : "DOES NOT FIT");
  std::cout << fmt::format(
      "\n\nGEMMs per micro-batch on one rank{} (m x n x k, batch; calls per layer x layers):\n",
      c.pp > 1 ? " of the last pipeline stage" : "");
  for (const auto& g : plan.gemms) {
    const auto& p = g.gemm.problem;
    std::cout << fmt::format("  {:<44} {:>7} x {:>7} x {:>7}  b{:<4} {}{}  {} x {}{}\n", g.gemm.name, p.m,
                             p.n, p.k, p.batch, p.transa ? 'T' : 'N', p.transb ? 'T' : 'N', g.calls_per_layer,
                             g.layers, g.note.empty() ? "" : "  (" + g.note + ")");
  }
  std::cout << fmt::format("\ncollectives per step on one rank{}:\n",
                           c.pp > 1 ? " of the last pipeline stage" : "");
  if (plan.collectives.empty()) std::cout << "  none (one rank per group)\n";
  for (const auto& col : plan.collectives)
    std::cout << fmt::format("  {:<30} {:<4} {:<15} group {:<4} {:>10}/call x {:<6} = {}/step{}\n", col.name,
                             col.group, col.op, col.group_size,
                             format_bytes(static_cast<std::uint64_t>(col.bytes_per_call)), col.calls_per_step,
                             format_bytes(static_cast<std::uint64_t>(col.bytes_per_step())),
                             col.note.empty() ? "" : "  (" + col.note + ")");
}

// --dry-run --attention-engine cudnn: cuDNN's own checks of the graphs it would build for the plan's
// attention, as on Hopper and on Blackwell (no GPU needed), so that a shape cuDNN refuses (fp8 with
// DeepSeek-V3's 192/128 heads on Hopper) is seen before GPUs are booked.
std::string cudnn_checks_note(const workloads::TrainPlan& plan) {
  const DType t = plan.shape.dtype;
  if (t != DType::bf16 && t != DType::fp16 && t != DType::fp8_e4m3)
    return fmt::format(
        "cuDNN attention takes bf16, fp16 or fp8_e4m3, not {}: a run refuses it (--dtype bf16)",
        to_string(t));
  const auto shape = workloads::train::attention_shape(plan);
  std::vector<std::string> verdicts;
  for (const auto& [sm, gpu] : {std::pair{90, "Hopper"}, std::pair{100, "Blackwell"}}) {
    std::optional<std::string> why;
    try {
      why = kernels::cudnn_graph_check_here(shape, plan.shape.dtype, sm);
    } catch (const Error& e) {
      why = e.what();
    }
    if (!why)
      return cudnn_attention_compiled_in()
                 ? "cuDNN's graph checks: not run (libcudnn.so.9 did not load here: " +
                       cudnn_library().error + ")"
                 : "cuDNN's graph checks: not run (this build has no cuDNN engine)";
    verdicts.push_back(why->empty() ? fmt::format("sm {} ({}) accepts", sm, gpu)
                                    : fmt::format("sm {} ({}) refuses: {}", sm, gpu, *why));
  }
  return fmt::format("cuDNN's graph checks of this shape: {}", fmt::join(verdicts, "; "));
}

DType default_dtype(BackendKind backend) {
  return backend == BackendKind::cuda ? DType::bf16 : DType::fp32;
}

// A suite's preflight: a train step whose model cannot fit in some rank's free memory is named before the
// first step runs, not after the others. Judged on the most favourable path the run could take (the
// backend's default dtype when none is given; the fused attention's estimate when auto may pick it), so
// only a step that cannot fit is refused; the run checks again with what it chose. A backend that cannot
// start on some rank is left for the suite to report as it starts (one error, not a step's).
void check_fits_before_the_suite(workloads::TrainOptions options, const workloads::TrainPlan& plan,
                                 bool default_type, Session& session) {
  Backend* started = nullptr;
  try {
    started = &session.backend();
  } catch (const Error&) {
  }
  if (!session.mpi().all_true(started != nullptr)) return;
  auto& backend = *started;
  if (default_type) options.shape.dtype = default_dtype(backend.kind());
  using kernels::AttentionEngineChoice;
  const bool half = options.shape.dtype == DType::bf16 || options.shape.dtype == DType::fp16;
  if (options.attention_engine == AttentionEngineChoice::cudnn ||
      options.attention_engine == AttentionEngineChoice::reference ||
      (options.attention_engine == AttentionEngineChoice::automatic && backend.kind() == BackendKind::cuda &&
       half))
    options.shape.fused_attention = true;
  const auto best = workloads::make_plan(plan.model, options.parallel, options.shape);
  const double smallest =
      allreduce(session.mpi(), static_cast<double>(backend.free_memory_bytes()), RankReduce::min);
  workloads::check_fits(best.memory, static_cast<std::uint64_t>(smallest), best.model, best.parallel,
                        best.shape);
}

// An attention engine that cannot run on a `kind` backend (reference off the host, cudnn off cuda or not
// built): the unsupported Error the run's engine factory throws.
void check_attention_engine(BackendKind kind, kernels::AttentionEngineChoice choice) {
  if (const auto why = kernels::attention_engine_unsupported(kind, choice); !why.empty())
    throw unsupported_error(why);
}

int run_train(const TrainCommandOptions& opt, Session& session) {
  auto& mpi = session.mpi();
  if (opt.dry_run) {
    // The plan for the requested layout, whatever the size of this job (plan a cluster from a laptop).
    check_layout_degrees(opt.train);
    const std::int64_t world = opt.train.tp * std::max<std::int64_t>(opt.train.dp, 1) * opt.train.pp;
    // The dtype the run would default to: the backend asked for (bf16 on cuda: a GPU plan from a laptop
    // with --backend cuda), or for auto the one this machine has.
    const auto choice_of_backend = parse_backend_choice(session.options().backend);
    const BackendKind kind = choice_of_backend == BackendChoice::cuda ? BackendKind::cuda
                             : choice_of_backend == BackendChoice::host || session.checking_only()
                                 ? BackendKind::host
                                 : session.backend().kind();
    auto options = make_train_options(opt.train, kind, world, session.options().seed);
    // An explicit fused engine plans its own path (no probability blocks, no strip GEMMs); auto is only
    // resolved on the ranks that run, so its plan is the blocked path's, as the note says.
    using kernels::AttentionEngineChoice;
    const auto choice = options.attention_engine;
    options.shape.fused_attention =
        choice == AttentionEngineChoice::cudnn || choice == AttentionEngineChoice::reference;
    // Each rank reads the model file on its own host: one that cannot stops every rank. The resilience
    // options are checked as the run would check them (a bad --faults or --keep 0 is not a plan).
    const auto plan = session.on_every_rank([&] {
      check_no_injection(session, "train");
      check_output_outside_run_dir(session.options().output, opt.resilience.run_dir);
      auto p = workloads::prepare_training(options, world);
      check_train_resilience(opt.resilience, opt.state_bytes, opt.mtbf, static_cast<int>(world), 1, options,
                             session.options().seed);
      return p;
    });
    if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
    // The run's own command line with --dry-run added is the way to see its plan first: its checkpoint and
    // fault options are checked above, and said not to act, rather than refused.
    std::vector<std::string> unused;
    for (const auto& a : resilience_options_argv(opt.resilience, opt.state_bytes, opt.mtbf))
      if (a.rfind("--", 0) == 0) unused.push_back(a);
    if (mpi.is_root() && !unused.empty())
      log::warn(
          "--dry-run: {} checked, not acted on (no run directory is made, nothing is saved or injected)",
          fmt::join(unused, ", "));
    auto report = session.begin_report(false);
    report.results.push_back(workloads::train_result(options, plan, nullptr, {}, world));
    const int rc = session.finish(report);
    if (mpi.is_root() && !session.options().quiet)
      print_plan(plan, 0,
                 choice == AttentionEngineChoice::automatic
                     ? "--attention-engine auto picks cudnn at run time where it can and re-plans; "
                       "--attention-engine cudnn shows that plan"
                 : choice == AttentionEngineChoice::cudnn ? cudnn_checks_note(plan)
                                                          : "");
    return rc;
  }
  // Everything that needs no device is validated first, and the model loaded once: the options, the model,
  // the layout (with the host's default dtype; the device's, when it differs, only changes the plan's sizes).
  // Each rank reads the model (and a --faults file) on its own host: one that cannot, a path only the first
  // host has, stops every rank with the reason instead of leaving the others in the first collective.
  auto options = make_train_options(opt.train, BackendKind::host, mpi.size(), session.options().seed);
  const auto backend_choice = parse_backend_choice(session.options().backend);
  auto [plan, checked] = session.on_every_rank([&] {
    // fp16 and fp8 are planned (--dry-run), not trained, on any backend: refused before one starts.
    const bool host = backend_choice == BackendChoice::host;
    if (const auto why = workloads::train_dtype_unsupported(host ? BackendKind::host : BackendKind::cuda,
                                                            options.shape.dtype);
        !why.empty())
      throw unsupported_error(why);
    // A suite's preflight: an attention engine the backend named cannot run (the suite has started a named
    // cuda backend already). The command alone checks the backend it starts, below.
    if (session.checking_only() && backend_choice != BackendChoice::automatic)
      check_attention_engine(host ? BackendKind::host : BackendKind::cuda, options.attention_engine);
    check_no_injection(session, "train");
    check_output_outside_run_dir(session.options().output, opt.resilience.run_dir);
    return std::pair{workloads::prepare_training(options, mpi.size()),
                     check_train_resilience(opt.resilience, opt.state_bytes, opt.mtbf, mpi.size(),
                                            mpi.local_size(), options, session.options().seed)};
  });
  // Each rank reads the model file on its own host: one that differs would train a mixture, or stop in a
  // collective of the wrong size.
  const auto same_model = [&mpi, digest = plan.model.file_digest, model = opt.train.model] {
    mpi.require_same_content(digest, "model files (--model " + model + ")");
  };
  if (session.checking_only()) {  // a suite's preflight: validated, nothing run
    // These collectives wait for every rank's own checks (a rank missing the model never reaches them).
    session.check_together(
        [&session, same_model, options, plan = plan, default_type = opt.train.dtype.empty()] {
          same_model();
          check_fits_before_the_suite(options, plan, default_type, session);
        });
    return 0;
  }
  same_model();
  auto& backend = session.backend();
  // Before the plan is printed and the run begun (the step found it only as it built its engine).
  check_attention_engine(backend.kind(), options.attention_engine);
  if (opt.train.dtype.empty() && default_dtype(backend.kind()) != options.shape.dtype) {
    options.shape.dtype = default_dtype(backend.kind());
    plan = workloads::make_plan(plan.model, options.parallel, options.shape);
  }
  if (mpi.is_root()) {
    warn_unreachable_faults(checked.plan, options.steps);
    warn_unreachable_checkpoints(checked.options, options.steps);
  }
  const auto checkpoint_params = resilience_params(checked.options);
  const auto hooks = make_train_hooks(std::move(checked), mpi, options, plan.model);
  // The plan first, as --dry-run prints it, so that a long run (or one stopped) has shown its layout and
  // memory before its first step.
  const bool printed_fused = plan.shape.fused_attention;
  if (mpi.is_root() && !session.options().quiet) {
    print_plan(plan, backend.free_memory_bytes());
    std::cout.flush();
  }
  auto report = session.begin_report();  // run.started_at: before the first step
  // Ctrl-C or a time limit keeps the steps measured so far (the result over them, and a failed
  // "interrupted"), and -o holds them as the run goes, for a SIGKILL or a crash (tools/interrupt_report.hpp).
  // The figures the ranks agree only at the end (memory allocated, MoE balance, each rank's steps) are left
  // out of it.
  // The result is built from the steps so far only when a report is written (tools/train_so_far.hpp), on
  // the report writer's thread or at a signal: from copies (in a suite it is read until the suite's step
  // ends, after this function's locals).
  const auto steps_so_far = std::make_shared<TrainSoFar>();
  const auto so_far = [steps_so_far, start = report, options, checkpoint_params, peak = session.peak(),
                       world = mpi.size()] {
    auto out = start;
    const auto partial = steps_so_far->snapshot();
    if (!partial) return out;
    auto r = workloads::train_result(options, partial->plan, &*partial, peak, world);
    r.params.update(checkpoint_params);
    std::erase_if(r.metrics, [](const auto& m) {
      return m.first == "memory_allocated_bytes_per_rank" || m.first == "moe_load_imbalance";
    });
    r.per_rank.clear();
    out.results = {std::move(r)};
    return out;
  };
  std::function<void(const workloads::TrainRun&)> on_step;
  if (mpi.is_root())
    on_step = [&session, steps_so_far](const workloads::TrainRun& partial) {
      steps_so_far->record(partial);
      session.save_so_far();
    };
  std::optional<InterruptReport> interrupted;
  interrupted.emplace(session, "train", so_far, [](const reports::Report& r) {
    if (r.results.empty()) return;
    std::cout << "\ntrain: stopped by a signal; the steps measured before it:\n";
    reports::print_train_result(std::cout, r.results.back());
  });
  const auto run = workloads::run_training(options, std::move(plan), mpi, backend, hooks.get(), on_step);
  interrupted.reset();
  report.results.push_back(workloads::train_result(options, run.plan, &run, session.peak(), mpi.size()));
  report.results.back().params.update(checkpoint_params);  // with --run-dir: every option it was given
  // A run its checks stopped (silent data corruption, a loss that is not finite) failed, whatever it
  // measured before: exit 1, not a short success.
  if (hooks)
    if (const auto why = hooks->stop_reason();
        !why.empty() && report.results.back().status != reports::Status::failed)
      report.results.back().fail(why);
  const int rc = session.finish(report);
  if (mpi.is_root() && !session.options().quiet) {
    // --attention-engine auto resolves on the ranks as they start (cuDNN where it can) and re-plans: the
    // plan that ran is shown again when it is not the one shown first.
    if (run.plan.shape.fused_attention != printed_fused) {
      std::cout << "\nplan as run (--attention-engine auto picked "
                << (run.plan.shape.fused_attention ? "cuDNN" : "blocked GEMMs") << " at run time):\n";
      print_plan(run.plan, backend.free_memory_bytes());
    }
    reports::print_train_result(std::cout, report.results.back());
  }
  return rc;
}

}  // namespace

void add_train_options(CLI::App& sub, TrainCliOptions& o) {
  sub.add_option("--model", o.model, "Model preset (configs/models/NAME.json) or a model JSON file")
      ->capture_default_str();
  sub.add_option("--tp", o.tp, "Tensor-parallel degree")->capture_default_str();
  add_count_option(sub, "--dp", o.dp, "Data-parallel degree (default: world / (tp x pp))");
  sub.add_option("--ep", o.ep, "Expert-parallel degree (MoE; divides dp x tp and the experts)")
      ->capture_default_str();
  sub.add_option(
         "--pp", o.pp,
         "Pipeline-parallel degree: stages of layers/pp layers, 1F1B over the --grad-accum micro-batches")
      ->capture_default_str();
  add_count_option(sub, "--seq", o.seq, "Sequence length (default: the model's; 8K = 8192)");
  sub.add_option("--micro-batch", o.micro_batch, "Sequences per micro-batch")->capture_default_str();
  sub.add_option("--grad-accum", o.grad_accum, "Micro-batches per step (gradient accumulation)")
      ->capture_default_str();
  sub.add_option("--steps", o.steps, "Training steps (including warm-up)")->capture_default_str();
  sub.add_option("--warmup-steps", o.warmup_steps,
                 "Leading steps left out of the statistics (default 2, or --steps - 1 when that is fewer)");
  sub.add_option(
      "--dtype", o.dtype,
      "bf16 or fp32 (fp16 and fp8 are planned by --dry-run, not run); default bf16 on cuda, fp32 on host");
  add_count_option(sub, "--layers", o.layers, "Instantiate only N layers (FLOPs and MFU are for what runs)");
  sub.add_option("--routing-skew", o.routing_skew, "MoE expert popularity skew (0 = uniform)")
      ->capture_default_str();
  add_enum_option(sub, "--recompute", o.recompute, workloads::kRecomputeNames,
                  "Activation recomputation (Korthikanti et al. 2022): none; selective (each layer's "
                  "attention core runs its forward again in backward; the blocked path keeps no "
                  "probabilities); full (only each layer's input is kept; the layer's forward runs again "
                  "before its backward). HFU counts the FLOPs run again");
  add_enum_option(sub, "--attention-flops", o.attention_flops, workloads::kAttentionFlopsNames,
                  "Attention FLOPs: causal (Megatron today) or full (legacy s^2 count, NeMo <= 25.07)");
  add_enum_option(sub, "--attention-engine", o.attention_engine, kernels::kAttentionEngineNames,
                  "How attention runs: auto (cuDNN fused attention where it can run: cuda, bf16/fp16, a "
                  "supported shape; else gemm, with a one-line notice), cudnn (or fail), gemm (blocked "
                  "GEMMs + softmax kernel), reference (host backend: the fp64 reference, for checks)");
  sub.add_flag(
      "--sequence-parallel", o.sequence_parallel,
      "Megatron sequence parallelism: TP all-reduces become reduce-scatter + all-gather; residual work on "
      "seq/tp rows");
  sub.add_flag("--distributed-optimizer", o.distributed_optimizer,
               "ZeRO-1: shard the fp32 master weights and Adam moments over DP (experts over expert-DP); "
               "gradients reduce-scattered, weights all-gathered after the update");
  sub.add_flag("--overlap", o.overlap, "Overlap the DP gradient reduction with backward (non-blocking)");
  sub.add_option("--bucket-layers", o.bucket_layers, "Layers per DP gradient bucket")->capture_default_str();
  sub.add_option("--lr", o.learning_rate, "Adam learning rate")->capture_default_str();
}

std::vector<std::string> train_options_argv(const TrainCliOptions& o) {
  const TrainCliOptions d;
  std::vector<std::string> a;
  const auto put = [&](const char* name, const auto& value, const auto& default_value) {
    if (value == default_value) return;
    a.push_back(name);
    if constexpr (std::is_floating_point_v<std::decay_t<decltype(value)>>)
      a.push_back(fmt::format("{}", value));  // shortest form that reads back to the same double
    else if constexpr (std::is_integral_v<std::decay_t<decltype(value)>>)
      a.push_back(std::to_string(value));
    else
      a.push_back(std::string(value));
  };
  const auto flag = [&](const char* name, bool on) {
    if (on) a.push_back(name);
  };
  put("--model", o.model, d.model);
  put("--tp", o.tp, d.tp);
  put("--dp", o.dp, d.dp);
  put("--ep", o.ep, d.ep);
  put("--pp", o.pp, d.pp);
  put("--seq", o.seq, d.seq);
  put("--micro-batch", o.micro_batch, d.micro_batch);
  put("--grad-accum", o.grad_accum, d.grad_accum);
  put("--steps", o.steps, d.steps);
  if (o.warmup_steps) {
    a.push_back("--warmup-steps");
    a.push_back(std::to_string(*o.warmup_steps));
  }
  put("--dtype", o.dtype, d.dtype);
  put("--layers", o.layers, d.layers);
  put("--routing-skew", o.routing_skew, d.routing_skew);
  put("--recompute", to_string(o.recompute), to_string(d.recompute));
  put("--attention-flops", to_string(o.attention_flops), to_string(d.attention_flops));
  put("--attention-engine", kernels::to_string(o.attention_engine), kernels::to_string(d.attention_engine));
  flag("--sequence-parallel", o.sequence_parallel);
  flag("--distributed-optimizer", o.distributed_optimizer);
  flag("--overlap", o.overlap);
  put("--bucket-layers", o.bucket_layers, d.bucket_layers);
  put("--lr", o.learning_rate, d.learning_rate);
  return a;
}

// Each degree at least 1 and at most 2^24 (16M, beyond any cluster), and so is their product: the layout
// arithmetic (world % (tp x pp), the plan's sizes) cannot wrap (tp x pp wrapping to 0 divided by zero).
void check_layout_degrees(const TrainCliOptions& cli) {
  constexpr std::int64_t kMax = std::int64_t{1} << 24;
  for (const auto& [name, value, least] : {std::tuple{"--tp", cli.tp, 1}, std::tuple{"--pp", cli.pp, 1},
                                           std::tuple{"--dp", cli.dp, 0}, std::tuple{"--ep", cli.ep, 1}}) {
    if (value < least) throw usage_error(fmt::format("invalid {} {}: must be at least 1", name, value));
    if (value > kMax) throw usage_error(fmt::format("invalid {} {}: at most {}", name, value, kMax));
  }
  if (cli.tp * cli.pp * std::max<std::int64_t>(cli.dp, 1) > kMax)
    throw usage_error(fmt::format("invalid layout --tp {} x --pp {} x --dp {}: more than {} ranks", cli.tp,
                                  cli.pp, cli.dp, kMax));
  // As a model file's $.seq: the plan's integer sizes (activations, scores) stay far from wrapping.
  if (cli.seq > kMax) throw usage_error(fmt::format("invalid --seq {}: at most {}", cli.seq, kMax));
}

workloads::TrainOptions make_train_options(const TrainCliOptions& cli, BackendKind backend,
                                           std::int64_t world, std::uint64_t seed) {
  workloads::TrainOptions o;
  o.model = cli.model;
  o.parallel.tp = cli.tp;
  o.parallel.ep = cli.ep;
  o.parallel.pp = cli.pp;
  check_layout_degrees(cli);
  if (cli.dp == 0 && world % (cli.tp * cli.pp) != 0)
    throw usage_error(
        fmt::format("world size {} is not divisible by --tp {} x --pp {}", world, cli.tp, cli.pp));
  o.parallel.dp = cli.dp > 0 ? cli.dp : world / (cli.tp * cli.pp);
  o.shape.seq = cli.seq;
  o.shape.micro_batch = cli.micro_batch;
  o.shape.grad_accum = cli.grad_accum;
  // The message offers the training dtypes only: parse_dtype's own named fp64 and int8, which train refuses.
  const auto refuse_dtype = [&] {
    return usage_error(fmt::format(
        "invalid --dtype {}: not a training dtype (expected bf16, fp16, fp8_e4m3, fp8_e5m2 or fp32)",
        cli.dtype));
  };
  o.shape.dtype = default_dtype(backend);
  if (!cli.dtype.empty()) {
    try {
      o.shape.dtype = parse_dtype(cli.dtype);  // names and aliases (fp8 = fp8_e4m3)
    } catch (const Error&) {
      throw refuse_dtype();
    }
  }
  if (o.shape.dtype != DType::bf16 && o.shape.dtype != DType::fp16 && o.shape.dtype != DType::fp32 &&
      o.shape.dtype != DType::fp8_e4m3 && o.shape.dtype != DType::fp8_e5m2)
    throw refuse_dtype();
  o.shape.sequence_parallel = cli.sequence_parallel;
  o.shape.distributed_optimizer = cli.distributed_optimizer;
  o.shape.attention = cli.attention_flops;
  o.shape.recompute = cli.recompute;
  o.attention_engine = cli.attention_engine;
  o.layers = cli.layers;
  o.steps = cli.steps;
  // The default leaves at least one measured step: --steps 1 and 2 run without naming --warmup-steps.
  o.warmup_steps =
      cli.warmup_steps.value_or(std::min<std::int64_t>(2, std::max<std::int64_t>(cli.steps - 1, 0)));
  o.warmup_default = !cli.warmup_steps;  // and so of the steps a resumed run has left
  o.routing_skew = cli.routing_skew;
  o.overlap = cli.overlap;
  o.shape.bucket_layers = cli.bucket_layers;
  if (!(cli.learning_rate > 0 && std::isfinite(cli.learning_rate)))
    throw usage_error(fmt::format("invalid --lr {}: must be positive and finite", cli.learning_rate));
  o.learning_rate = static_cast<float>(cli.learning_rate);
  // Applied in fp32: a rate that rounds to 0 (nothing trains) or to infinity there is as bad as one here.
  if (!(o.learning_rate > 0 && std::isfinite(o.learning_rate)))
    throw usage_error(fmt::format("invalid --lr {}: {} in fp32, where the optimizer applies it",
                                  cli.learning_rate, o.learning_rate > 0 ? "infinite" : "zero"));
  // Adam moves every weight by about lr a step, and the weights start near 1/√in: past 1 they overflow in a
  // few steps (1e30 trained to a loss of exactly 0 and was reported as a run).
  if (cli.learning_rate > 1)
    throw usage_error(fmt::format(
        "invalid --lr {}: at most 1 (Adam moves every weight by about lr each step)", cli.learning_rate));
  o.seed = seed;
  return o;
}

Command add_train_command(CLI::App& app) {
  auto opt = std::make_shared<TrainCommandOptions>();
  auto* sub = app.add_subcommand("train",
                                 "Transformer training step (dense or MoE) under TP/DP/EP/PP: step time, "
                                 "tokens/s, model TFLOP/s per GPU, MFU");
  add_train_options(*sub, opt->train);
  add_resilience_options(*sub, opt->resilience, opt->state_bytes, opt->mtbf);
  sub->add_flag("--dry-run", opt->dry_run,
                "Print and report the plan (parameters, FLOPs, memory, GEMMs, collectives)");
  return {sub, [opt](Session& s) { return run_train(*opt, s); }, true};
}

}  // namespace fb::tools
