// factorybench gemm: achieved matrix-multiply throughput on every rank (cuBLASLt on cuda, OpenBLAS on host),
// MFU against the dtype's peak, a check against an fp64 reference, and the ranks slower than the median.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/units.hpp"
#include "reports/gemm_console.hpp"
#include "tools/commands.hpp"
#include "tools/count_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/live_table.hpp"
#include "tools/report_so_far.hpp"
#include "workloads/gemm_benchmark.hpp"
#include "workloads/gemm_flops.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/model_config.hpp"

namespace fb::tools {
namespace {

struct GemmCliOptions {
  std::string m, n, k;  // lists or ranges; empty = the backend's default
  std::int64_t batch = 1;
  std::string ta, tb;  // N or T; empty = the dtype's default (TN for fp8, NN otherwise)
  std::string dtype;   // empty = bf16 on cuda, fp32 on host
  int iters = 20, warmup = 5, autotune = 8;
  bool sweep = false, no_check = false;
  bool autotune_given = false;  // --autotune on the command line (the host engine has nothing to tune)
  std::string outlier_threshold = "5%";
  std::string model;
  std::int64_t tp = 1, seq = 0, micro_batch = 1;
};

bool parse_transpose(const std::string& text, const char* option, bool fallback) {
  if (text.empty()) return fallback;
  if (text == "N" || text == "n") return false;
  if (text == "T" || text == "t") return true;
  throw usage_error(fmt::format("invalid {} '{}': expected N or T", option, text));
}

// "5%" or "0.05" → 0.05.
double parse_fraction(const std::string& text, const char* option) {
  std::string t = text;
  const bool percent = !t.empty() && t.back() == '%';
  if (percent) t.pop_back();
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(t, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != t.size())
    throw usage_error(fmt::format("invalid {} '{}': expected a fraction such as 0.05 or 5%", option, text));
  if (percent) v /= 100;
  if (!(v > 0 && v < 1))
    throw usage_error(fmt::format("invalid {} '{}': must be between 0 and 100%", option, text));
  return v;
}

int run_gemm(const GemmCliOptions& cli, Session& session) {
  // Options that need no device are checked first, so a typo costs nothing.
  workloads::validate_iterations(cli.iters, cli.warmup);
  if (cli.autotune < 1)
    throw usage_error(fmt::format("invalid --autotune {}: must be at least 1", cli.autotune));
  if (cli.batch < 1) throw usage_error(fmt::format("invalid --batch {}: must be positive", cli.batch));
  const double threshold = parse_fraction(cli.outlier_threshold, "--outlier-threshold");
  std::optional<DType> dtype;
  if (!cli.dtype.empty()) {
    try {
      dtype = parse_dtype(cli.dtype);
    } catch (const Error& e) {
      throw usage_error(std::string("--dtype: ") + e.what());
    }
  }
  const bool dims_given = !cli.m.empty() || !cli.n.empty() || !cli.k.empty();
  std::optional<workloads::ModelConfig> model;
  if (!cli.model.empty()) {
    if (dims_given || cli.sweep || cli.batch != 1)
      throw usage_error("--model takes its shapes from the model: drop --m/--n/--k/--batch/--sweep");
    if (!cli.ta.empty() || !cli.tb.empty())
      throw usage_error(
          "--model takes each pass's layout from the model (forward, dgrad and wgrad each have their own): "
          "drop --ta/--tb");
    if (cli.tp < 1) throw usage_error(fmt::format("invalid --tp {}: must be at least 1", cli.tp));
    if (cli.micro_batch < 1)
      throw usage_error(fmt::format("invalid --micro-batch {}: must be at least 1", cli.micro_batch));
    model = workloads::load_model(cli.model);
  } else if (cli.tp != 1 || cli.seq != 0 || cli.micro_batch != 1) {
    throw usage_error("--tp, --seq and --micro-batch describe a model's GEMMs and need --model");
  }
  std::vector<std::int64_t> ms, ns, ks;
  if (!cli.m.empty()) ms = workloads::parse_gemm_dims(cli.m, "--m");
  if (!cli.n.empty()) ns = workloads::parse_gemm_dims(cli.n, "--n");
  if (!cli.k.empty()) ks = workloads::parse_gemm_dims(cli.k, "--k");
  // Every combination is one case: three long ranges would be billions of shapes (and all of memory).
  constexpr std::size_t kMaxShapes = 100000;
  const auto count = [](const std::vector<std::int64_t>& d) { return std::max<std::size_t>(d.size(), 1); };
  if (static_cast<double>(count(ms)) * static_cast<double>(count(ns)) * static_cast<double>(count(ks)) >
      static_cast<double>(kMaxShapes))
    throw usage_error(fmt::format("--m/--n/--k: {} x {} x {} shapes; at most {} per run", count(ms),
                                  count(ns), count(ks), kMaxShapes));
  // FACTORYBENCH_INJECT: gemm sends nothing through the communicator and runs no burn-in or collective check,
  // so run alone it refuses every entry (one that cannot act tests nothing); a suite step checks the ranks.
  check_injection_for(session, "gemm", {});
  if (session.checking_only()) {  // a suite's preflight: what does not depend on the device, then nothing run
    // A dtype no engine of the named backend runs (with auto, of either backend: int8) stops the suite now.
    if (dtype) {
      const auto choice = parse_backend_choice(session.options().backend);
      const auto host = kernels::gemm_unsupported_reason(BackendKind::host, *dtype);
      const auto cuda = kernels::gemm_unsupported_reason(BackendKind::cuda, *dtype);
      const std::string& why = choice == BackendChoice::host   ? host
                               : choice == BackendChoice::cuda ? cuda
                               : host.empty()                  ? host
                                                               : cuda;
      if (!why.empty()) throw unsupported_error(why);
    }
    parse_transpose(cli.ta, "--ta", false);
    parse_transpose(cli.tb, "--tb", false);
    if (model) (void)workloads::gemm_cases_for_model(*model, {cli.tp, cli.seq, cli.micro_batch}, DType::fp32);
    return 0;
  }

  auto& mpi = session.mpi();
  auto& backend = session.backend();
  const auto& defaults = backend.defaults().gemm;
  const DType type = dtype.value_or(defaults.dtype);
  if (const auto why = kernels::gemm_unsupported_reason(backend.kind(), type); !why.empty())
    throw unsupported_error(why);
  // A warning, not a refusal: the GPU suites pass --autotune and must still run on a host-only machine.
  if (cli.autotune_given && !defaults.autotunes && mpi.is_root())
    log::warn("--autotune {}: the {} backend's GEMM (OpenBLAS) has no algorithms to choose from; ignored",
              cli.autotune, to_string(backend.kind()));

  std::vector<workloads::GemmCase> cases;
  if (model) {
    cases = workloads::gemm_cases_for_model(*model, {cli.tp, cli.seq, cli.micro_batch}, type);
  } else {
    const std::vector<std::int64_t> fallback =
        cli.sweep ? defaults.sweep_dims : std::vector<std::int64_t>{defaults.dim};
    if (ms.empty()) ms = fallback;
    if (ns.empty()) ns = fallback;
    if (ks.empty()) ks = fallback;
    const bool ta = parse_transpose(cli.ta, "--ta", workloads::default_transa(type));
    const bool tb = parse_transpose(cli.tb, "--tb", false);
    cases = workloads::gemm_cases_from_dims(type, ms, ns, ks, cli.batch, ta, tb);
  }
  workloads::check_gemm_memory(mpi, backend, cases, !cli.no_check);
  // OpenBLAS runs at best at the host's measured peak: a request of hours (--m/--n/--k 32K is 7e13 FLOP a
  // call, about 8 minutes each at 0.14 TFLOP/s) is refused at once, as attention and simulate refuse runaway
  // work, rather than run silently inside one call.
  if (backend.kind() == BackendKind::host) {
    if (const auto peak = session.peak().for_dtype(std::string(to_string(type))); peak && *peak > 0) {
      const double calls =
          static_cast<double>(cli.warmup + cli.iters + (defaults.autotunes ? cli.autotune : 0));
      double flops = 0;
      for (const auto& c : cases)
        flops += workloads::gemm_flops(c.problem.m, c.problem.n, c.problem.k, c.problem.batch) * calls;
      constexpr double kMaxHostSeconds = 1800;
      const double seconds = flops / (*peak * 1e12);
      if (seconds > kMaxHostSeconds)
        throw usage_error(fmt::format(
            "gemm on the host backend: {:.3g} FLOP ({} shape(s) x {} calls) would take at least {} at this "
            "host's {} peak of {:.3g} TFLOP/s; at most half an hour (smaller --m/--n/--k, fewer --iters, or "
            "a "
            "GPU)",
            flops, cases.size(), calls, format_duration(seconds), to_string(type), *peak));
    }
  }

  workloads::GemmRunOptions o;
  o.iters = cli.iters;
  o.warmup = cli.warmup;
  o.autotune = cli.autotune;
  o.check = !cli.no_check;
  o.outlier_threshold = threshold;
  o.seed = session.options().seed;
  o.telemetry = session.telemetry();

  // After every check (a refused input gets its one line alone), before the first measurement.
  if (const auto thin = workloads::few_samples_warning(cli.iters, cli.warmup); !thin.empty())
    log::warn("{}", thin);
  auto report = session.begin_report();
  // Rank 0 prints each shape as soon as it is measured: a sweep of thousands of shapes shows its figures
  // live, and its log keeps them however the job ends.
  const auto live = LiveTable<reports::GemmTableStream>::make();
  if (mpi.is_root() && !session.options().quiet) {
    std::vector<std::string> names;
    for (const auto& c : cases) names.push_back(c.name);
    live->table.emplace(std::cout, names);
  }
  o.on_started = [live, &mpi, &session, type, &o, shapes = cases.size()](const std::string& engine,
                                                                         bool emulated) {
    std::lock_guard lock(live->mutex);
    if (!live->table) return;
    std::cout << fmt::format("# factorybench gemm: {} rank(s), {}, {} iters after {} warm-up, {} shape(s)\n",
                             mpi.size(), to_string(type), o.iters, o.warmup, shapes);
    live->table->begin({{"engine", engine}, {"emulated", emulated}, {"peak_source", session.peak().source}});
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
  interrupted.emplace(
      session, "gemm", ReportSoFar::reader(so_far), [live, shapes = cases.size()](const reports::Report& r) {
        std::lock_guard lock(live->mutex);
        if (!live->table || std::exchange(live->closed, true)) return;  // -q, not rank 0, or ended
        live->table->finish(nlohmann::json::object());
        std::cout << fmt::format("# factorybench gemm: {} of {} shape(s) measured before the signal\n",
                                 r.results.size(), shapes);
      });
  auto run = workloads::run_gemm_benchmark(mpi, backend, session.peak(), type, cases, o, cli.sweep);
  interrupted.reset();
  {
    std::lock_guard lock(live->mutex);
    if (live->table && !std::exchange(live->closed, true)) live->table->finish(run.summary);
  }
  for (auto& r : run.results) report.results.push_back(std::move(r));
  report.summary = std::move(run.summary);
  return session.finish(report);
}

}  // namespace

Command add_gemm_command(CLI::App& app) {
  auto opt = std::make_shared<GemmCliOptions>();
  auto* sub = app.add_subcommand(
      "gemm", "Matrix-multiply throughput and MFU on every rank (cuBLASLt on cuda, OpenBLAS on host)");
  sub->add_option("--m", opt->m,
                  "Rows of C: a size (4096, 8K), a list (4096,8192) or a range start:stop:step");
  sub->add_option("--n", opt->n, "Columns of C (same forms as --m)");
  sub->add_option("--k", opt->k, "Inner dimension (same forms as --m); default 8192 on cuda, 1024 on host");
  sub->add_option("--batch", opt->batch, "Strided-batched GEMM: this many independent products")
      ->capture_default_str();
  sub->add_option("--ta", opt->ta, "op(A): N or T (default TN for fp8, NN otherwise; column-major)");
  sub->add_option("--tb", opt->tb, "op(B): N or T");
  sub->add_option(
      "-d,--dtype", opt->dtype,
      "bf16, fp16, tf32, fp32, fp8_e4m3, fp8_e5m2 (cuda); fp32, fp64, bf16 (host). Default bf16 on "
      "cuda, fp32 on host");
  sub->add_option("-n,--iters", opt->iters, "Timed iterations per shape")->capture_default_str();
  sub->add_option("-w,--warmup", opt->warmup, "Untimed iterations before timing")->capture_default_str();
  sub->add_flag(
      "--sweep", opt->sweep,
      "MAMF-style sweep over all combinations of --m/--n/--k (default cuda {2048..8192 step 2048}, host "
      "{256,512,768}): best shape and mean");
  sub->add_option(
         "--autotune", opt->autotune,
         "cuda: time this many cuBLASLt heuristic candidates, keep the fastest (host: one algorithm, "
         "ignored with a warning)")
      ->capture_default_str();
  sub->add_flag("--no-check", opt->no_check, "Skip the fp64 reference check of sampled outputs");
  sub->add_option("--outlier-threshold", opt->outlier_threshold,
                  "Flag ranks this far below the median TFLOP/s (0.05 or 5%)")
      ->capture_default_str();
  sub->add_option("--model", opt->model,
                  "The GEMMs of one transformer layer of this model (preset name or JSON file)");
  sub->add_option("--tp", opt->tp, "--model: tensor-parallel degree")->capture_default_str();
  add_count_option(*sub, "--seq", opt->seq, "--model: sequence length (default: the model's)");
  sub->add_option("--micro-batch", opt->micro_batch, "--model: sequences per micro-batch")
      ->capture_default_str();
  return {sub,
          [opt, sub](Session& s) {
            opt->autotune_given = sub->count("--autotune") > 0;
            return run_gemm(*opt, s);
          },
          true};
}

}  // namespace fb::tools
