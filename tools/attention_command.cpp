// factorybench attention: fused causal attention forward and backward on every rank (cuDNN SDPA on cuda,
// the fp64 host reference on host), in TFLOP/s of Megatron's count, with sampled rows checked in fp64.
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "reports/attention_console.hpp"
#include "tools/commands.hpp"
#include "tools/enum_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/live_table.hpp"
#include "tools/report_so_far.hpp"
#include "workloads/attention_benchmark.hpp"
#include "workloads/gemm_benchmark.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/model_config.hpp"
#include "workloads/parallel_layout.hpp"

namespace fb::tools {
namespace {

struct AttentionCliOptions {
  kernels::AttentionEngineChoice engine = kernels::AttentionEngineChoice::automatic;
  std::string seq;  // a size, list or range; empty = the backend's default (or the model's)
  std::int64_t batch = 1;
  std::optional<std::int64_t> heads, kv_heads, head_dim, value_dim;  // unset: the default or the model's
  std::string dtype;                                                 // empty = bf16 on cuda, fp32 on host
  bool no_causal = false, no_check = false;
  int iters = 20, warmup = 5;
  std::string model;
  std::int64_t tp = 1;
};

// Llama 3 8B's attention on a GPU (issue 15's shape); a shape the fp64 reference runs in seconds on a host.
kernels::AttentionShape default_shape(BackendKind kind) {
  kernels::AttentionShape s;
  const bool gpu = kind == BackendKind::cuda;
  s.seq = gpu ? 8192 : 256;
  s.heads = gpu ? 32 : 4;
  s.kv_heads = gpu ? 8 : 2;
  s.head_dim = s.value_dim = gpu ? 128 : 32;
  return s;
}

void require_positive(const std::optional<std::int64_t>& v, const char* option) {
  if (v && *v < 1) throw usage_error(fmt::format("invalid {} {}: must be positive", option, *v));
}

int run_attention(const AttentionCliOptions& cli, Session& session) {
  workloads::validate_iterations(cli.iters, cli.warmup);
  workloads::check_benchmark_attention_choice(cli.engine);
  if (cli.batch < 1) throw usage_error(fmt::format("invalid --batch {}: must be positive", cli.batch));
  require_positive(cli.heads, "--heads");
  require_positive(cli.kv_heads, "--kv-heads");
  require_positive(cli.head_dim, "--head-dim");
  require_positive(cli.value_dim, "--value-dim");
  if (cli.tp < 1) throw usage_error(fmt::format("invalid --tp {}: must be at least 1", cli.tp));
  std::optional<DType> dtype;
  if (!cli.dtype.empty()) {
    try {
      dtype = parse_dtype(cli.dtype);
    } catch (const Error& e) {
      throw usage_error(std::string("--dtype: ") + e.what());
    }
  }
  std::vector<std::int64_t> seqs;
  if (!cli.seq.empty()) seqs = workloads::parse_gemm_dims(cli.seq, "--seq");

  // The device's defaults. A suite's preflight touches no device (an error in starting it is the suite's,
  // not this step's): it takes the backend asked for, and for auto the host's defaults without the host's
  // cost limit, which the step checks again when it runs on the backend it got; a shape that only the GPU's
  // defaults make valid (--kv-heads 8 beside cuda's 32 heads, not the host's 4) passes there.
  const auto choice = parse_backend_choice(session.options().backend);
  const bool backend_known = !session.checking_only() || choice != BackendChoice::automatic;
  const BackendKind kind = !session.checking_only()        ? session.backend().kind()
                           : choice == BackendChoice::cuda ? BackendKind::cuda
                                                           : BackendKind::host;
  // An engine the backend cannot run (reference off the host, cudnn off cuda or not built) is named before a
  // shape is built or a device buffer allocated: the same words as the run's.
  if (backend_known)
    if (const auto why = workloads::benchmark_attention_unsupported(kind, cli.engine); !why.empty())
      throw unsupported_error(why);
  const auto make_cases = [&](BackendKind device, std::vector<std::int64_t> lengths) {
    kernels::AttentionShape base = default_shape(device);
    nlohmann::json params = nlohmann::json::object();
    if (!cli.model.empty()) {
      if (cli.heads || cli.kv_heads || cli.head_dim || cli.value_dim)
        throw usage_error(
            "--model takes the heads and head dims from the model: drop "
            "--heads/--kv-heads/--head-dim/--value-dim");
      // The step's per-rank attention: heads split over TP as the training step splits them.
      // Each rank reads the model file on its own host: one that cannot stops every rank.
      const auto model = session.on_every_rank([&] { return workloads::load_model(cli.model); });
      workloads::StepShape step;
      step.seq = lengths.empty() ? 0 : lengths.front();
      const auto plan = workloads::make_plan(model, workloads::ParallelConfig{cli.tp, 1, 1, 1}, step);
      base.heads = plan.local.heads;
      base.kv_heads = plan.local.kv_heads;
      base.head_dim = plan.local.head_dim;
      base.value_dim = plan.local.v_head_dim;
      if (lengths.empty()) lengths = {plan.local.seq};
      params = {{"model", model.name}, {"tp", cli.tp}};
    } else if (cli.tp != 1) {
      throw usage_error("--tp splits a model's heads and needs --model");
    } else {
      if (cli.heads) base.heads = *cli.heads;
      if (cli.kv_heads)
        base.kv_heads = *cli.kv_heads;
      else if (cli.heads)
        base.kv_heads = *cli.heads;  // --heads alone: multi-head attention
      if (cli.head_dim) base.head_dim = base.value_dim = *cli.head_dim;
      if (cli.value_dim) base.value_dim = *cli.value_dim;
    }
    if (lengths.empty()) lengths = {base.seq};
    base.batch = cli.batch;
    base.causal = !cli.no_causal;
    base.scale = 1.0f / std::sqrt(static_cast<float>(base.head_dim));
    const DType type = dtype.value_or(device == BackendKind::cuda ? DType::bf16 : DType::fp32);
    std::vector<workloads::AttentionCase> cases;
    for (const auto seq : lengths) {
      workloads::AttentionCase c;
      c.shape = base;
      c.shape.seq = seq;
      kernels::check_attention_shape(c.shape);
      c.dtype = type;
      c.name = workloads::attention_case_name(c.shape, type);
      c.params = params;
      cases.push_back(std::move(c));
    }
    return std::pair{std::move(cases), type};
  };
  std::vector<workloads::AttentionCase> cases;
  DType type = DType::fp32;
  try {
    std::tie(cases, type) = make_cases(kind, seqs);
  } catch (const Error& e) {
    if (backend_known || e.kind() != ErrorKind::usage) throw;
    std::tie(cases, type) = make_cases(BackendKind::cuda, seqs);  // refused only when the GPU's fail too
  }
  // The host runs the reference engine, O(s²·(d + dv)) per head: 3e8 to 6e8 score-element x head-dim
  // products (forward + backward) a second on one core of the CI machine (6e8 at d 32, 3e8 at d 1024). A
  // request of hours (--seq 1M, --head-dim 1024 at --seq 8K) is refused at once, as gemm and simulate refuse
  // runaway work, rather than running silently inside one shape.
  if (kind == BackendKind::host && backend_known) {
    // A pass is a forward and a backward: warm-up and timed iterations, the check's, and the forward
    // that refreshes each buffer set used before the backward loop (counted as half a pass: a forward is
    // well under half of the pair's work).
    const double passes = 1.5 * static_cast<double>(cli.iters + cli.warmup) + (cli.no_check ? 0 : 1);
    double work = 0;
    for (const auto& c : cases) {
      const double s = static_cast<double>(c.shape.seq);
      work += static_cast<double>(c.shape.batch) * static_cast<double>(c.shape.heads) *
              (c.shape.causal ? s * (s + 1) / 2 : s * s) *
              static_cast<double>(c.shape.head_dim + c.shape.value_dim) * passes;
    }
    constexpr double kMaxHostWork = 6.4e11;  // half an hour at 3.5e8 a second
    if (work > kMaxHostWork)
      throw usage_error(fmt::format(
          "attention on the host backend: {:.3g} score-element x head-dim products (batch x heads x s^2/2 "
          "causal x (head dim + value dim), x {} passes) would take over half an hour (about 3.5e8 a "
          "second); at most {:.2g} (a smaller --seq, fewer --heads, smaller head dims or fewer --iters, or "
          "a GPU)",
          work, passes, kMaxHostWork));
  }
  // FACTORYBENCH_INJECT: attention sends nothing through the communicator and runs no burn-in or collective
  // check, so run alone it refuses every entry (one that cannot act tests nothing); a suite step checks
  // ranks.
  check_injection_for(session, "attention", {});
  if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
  auto& mpi = session.mpi();
  auto& backend = session.backend();
  workloads::check_attention_memory(mpi, backend, cases);

  workloads::AttentionRunOptions o;
  o.engine = cli.engine;
  o.iters = cli.iters;
  o.warmup = cli.warmup;
  o.check = !cli.no_check;
  o.seed = session.options().seed;
  o.telemetry = session.telemetry();
  // After every check (a refused input gets its one line alone), before the first measurement.
  if (const auto thin = workloads::few_samples_warning(cli.iters, cli.warmup); !thin.empty())
    log::warn("{}", thin);
  auto report = session.begin_report();
  // Rank 0 prints each shape as soon as it is measured (as gemm does): a run over many sequence lengths
  // shows its figures live, and its log keeps them however the job ends.
  const auto live = LiveTable<reports::AttentionTableStream>::make();
  if (mpi.is_root() && !session.options().quiet) {
    std::vector<std::string> names;
    for (const auto& c : cases) names.push_back(c.name);
    live->table.emplace(std::cout, names, !cli.no_causal, cli.no_causal);
  }
  o.on_started = [live, &mpi, type, &o, shapes = cases.size()](const std::string& engine) {
    std::lock_guard lock(live->mutex);
    if (!live->table) return;
    std::cout << fmt::format(
        "# factorybench attention: {} rank(s), {}, {} iters after {} warm-up, {} shape(s)\n", mpi.size(),
        to_string(type), o.iters, o.warmup, shapes);
    live->table->begin(engine);
  };
  // Ctrl-C or a time limit keeps the shapes measured so far (tools/interrupt_report.hpp).
  const auto so_far = ReportSoFar::make(report);
  o.on_result = [so_far, live, &session](const reports::Result& r) {
    so_far->add(r);
    {
      std::lock_guard lock(live->mutex);
      if (live->table) live->table->add(r);
    }
    session.save_so_far();  // -o keeps it even if the job is killed (tools/interrupt_report.hpp)
  };
  std::optional<InterruptReport> interrupted;
  interrupted.emplace(session, "attention", ReportSoFar::reader(so_far),
                      [live, shapes = cases.size()](const reports::Report& r) {
                        std::lock_guard lock(live->mutex);
                        if (!live->table || std::exchange(live->closed, true))
                          return;  // -q, not rank 0, or ended
                        live->table->finish();
                        std::cout << fmt::format(
                            "# factorybench attention: {} of {} shape(s) measured before the signal\n",
                            r.results.size(), shapes);
                        std::cout.flush();
                      });
  auto run = workloads::run_attention_benchmark(mpi, backend, session.peak(), cases, o);
  interrupted.reset();
  {
    std::lock_guard lock(live->mutex);
    if (live->table && !std::exchange(live->closed, true)) live->table->finish();
  }
  for (auto& r : run.results) report.results.push_back(std::move(r));
  report.summary = std::move(run.summary);
  return session.finish(report);
}

}  // namespace

Command add_attention_command(CLI::App& app) {
  auto opt = std::make_shared<AttentionCliOptions>();
  auto* sub = app.add_subcommand(
      "attention",
      "Fused causal attention forward + backward on every rank (cuDNN SDPA on cuda, the fp64 reference on "
      "host): TFLOP/s (Megatron count), MFU, sampled fp64 check");
  add_enum_option(*sub, "--engine", opt->engine, kernels::kAttentionEngineNames,
                  "auto (cudnn on cuda, reference on host), cudnn or reference; the step's blocked-GEMM "
                  "attention is timed by `train --attention-engine gemm`",
                  /*list_names=*/false);
  sub->add_option(
      "--seq", opt->seq,
      "Sequence length: a size (8192, 8K), a list (2048,4096) or a range start:stop:step; default "
      "8192 on cuda, 256 on host, or the model's");
  sub->add_option("--batch", opt->batch, "Sequences per call")->capture_default_str();
  sub->add_option("--heads", opt->heads, "Query heads (default 32 on cuda, 4 on host)");
  sub->add_option("--kv-heads", opt->kv_heads,
                  "Key/value heads, dividing --heads (grouped-query attention; default 8 on cuda, 2 on host, "
                  "--heads where --heads alone is given)");
  sub->add_option("--head-dim", opt->head_dim, "Query/key head dim (default 128 on cuda, 32 on host)");
  sub->add_option("--value-dim", opt->value_dim, "Value head dim (default: --head-dim; MLA differs)");
  sub->add_option("-d,--dtype", opt->dtype,
                  "bf16, fp16 or fp8_e4m3 (cuda, default bf16; fp8 needs head dim 128 on Hopper); fp32, "
                  "bf16, fp16 or fp8_e4m3 (host, default fp32). fp8 scales each tensor, calibrated by one "
                  "untimed pass (docs/attention.md)");
  sub->add_flag("--no-causal", opt->no_causal, "Every query sees every key (no mask; FLOPs not halved)");
  sub->add_option("-n,--iters", opt->iters, "Timed iterations per direction and shape")
      ->capture_default_str();
  sub->add_option("-w,--warmup", opt->warmup, "Untimed iterations before timing")->capture_default_str();
  sub->add_flag("--no-check", opt->no_check, "Skip the fp64 check of sampled rows");
  sub->add_option("--model", opt->model,
                  "The attention of this model (preset name or JSON file), per TP rank");
  sub->add_option("--tp", opt->tp, "--model: tensor-parallel degree (heads per rank = heads / tp)")
      ->capture_default_str();
  return {sub, [opt](Session& s) { return run_attention(*opt, s); }, true};
}

}  // namespace fb::tools
