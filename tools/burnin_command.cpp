// factorybench burnin: sustained GEMMs on every rank with periodic silent-data-corruption checks and a
// per-node verdict (workloads/burnin.hpp, docs/locate.md). Exit 0 every node passes, 1 otherwise.
#include <algorithm>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/rank_collectives.hpp"
#include "core/units.hpp"
#include "reports/burnin_console.hpp"
#include "tools/command_hang_watchdog.hpp"
#include "tools/commands.hpp"
#include "tools/count_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "workloads/burnin.hpp"
#include "workloads/gemm_flops.hpp"

namespace fb::tools {
namespace {

struct BurninCliOptions {
  std::string duration = "20m";
  std::string check_interval;
  std::int64_t size = 0;
  std::string hang_timeout = "5m";
  std::string run_dir = ".";
  bool run_dir_given = false;
};

// summary.burnin: the verdict, the checks after the reference (check 0) taken and planned, and the times.
nlohmann::json burnin_summary(const workloads::BurninRun& run) {
  return {{"verdict", run.pass() ? "pass" : "fail"},
          // Numbered as FACTORYBENCH_INJECT's check=N: 1..N after the reference.
          {"checks", std::max(0, run.checks_done())},
          {"checks_planned", run.checks_planned},
          {"size", run.size},
          {"duration_s", run.duration_s},
          {"elapsed_s", run.elapsed_s}};
}

int run_burnin_command(const BurninCliOptions& cli, Session& session) {
  workloads::BurninOptions o;
  o.duration_s = parse_duration(cli.duration, "--duration");
  if (o.duration_s <= 0) throw usage_error("invalid --duration '" + cli.duration + "': must be positive");
  if (!cli.check_interval.empty()) {
    o.check_interval_s = parse_duration(cli.check_interval, "--check-interval");
    if (o.check_interval_s <= 0 || o.check_interval_s > o.duration_s)
      throw usage_error("invalid --check-interval '" + cli.check_interval + "': must be in (0, --duration]");
  }
  // Every check keeps its checksum: a number of checks that does not fit memory (or an int) is a typo.
  const double checks = workloads::burnin_check_count(o);
  if (checks > 1e7) {
    throw usage_error(fmt::format("--duration {} / --check-interval {} is {:.3g} checks: at most 10 million",
                                  cli.duration, cli.check_interval.empty() ? "(a tenth)" : cli.check_interval,
                                  checks));
  }
  if (cli.size < 0) throw usage_error(fmt::format("invalid --size {}: must be positive", cli.size));
  o.size = cli.size;
  o.seed = session.options().seed;
  auto& mpi = session.mpi();
  const double hang_timeout = parse_command_hang_timeout(cli.hang_timeout, cli.run_dir_given);
  // A bad FACTORYBENCH_INJECT stops here. Burn-in exchanges its checksums outside the communicator, one
  // numbered call per check (the reference's first): sdc acts on a check, hang on a call.
  check_injection_for(session, "burnin", {.numbered_calls = true, .sdc = true});
  if (const auto& f = injected_faults(); f.sdc_rank >= 0 || f.hang_rank >= 0) {
    const auto runs = static_cast<std::uint64_t>(checks);
    if (f.sdc_rank >= 0 && f.sdc_check > runs)
      throw usage_error(
          fmt::format("FACTORYBENCH_INJECT '{}': sdc at check {}, but this burn-in runs {} check(s)", f.text,
                      f.sdc_check, runs));
    // In a suite the calls are numbered across its steps, and an entry a step cannot reach is the job's.
    if (f.hang_rank >= 0 && !session.in_suite() && f.hang_call > runs + 1)
      throw usage_error(
          fmt::format("FACTORYBENCH_INJECT '{}': hang at call {}, but this burn-in makes {} call(s) (one "
                      "gather per check, the reference's first)",
                      f.text, f.hang_call, runs + 1));
  }
  check_hang_run_dir(session, cli.run_dir, hang_timeout);
  if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
  auto& backend = session.backend();
  // Three size x size fp32 operands on the device and one copy on the host, against the smallest free memory
  // of any rank: every rank stops alike, with the option to change (was: exit 3 from the allocation).
  if (o.size > 0) {
    const double need = 4.0 * 4.0 * static_cast<double>(o.size) * static_cast<double>(o.size);
    const auto free_min =
        allreduce(mpi, static_cast<std::uint64_t>(backend.free_memory_bytes()), RankReduce::min);
    if (need > static_cast<double>(free_min))
      throw usage_error(fmt::format("invalid --size {}: its operands need {} per rank, but only {} is free",
                                    o.size, format_bytes(static_cast<std::uint64_t>(std::min(need, 1.8e19))),
                                    format_bytes(free_min)));
  }
  // On the host, a --size whose one GEMM outlasts a check interval at one core's measured peak cannot keep
  // --duration (one 32K GEMM is minutes; a 5 s burn-in ran for hours, silent): refused at once. One core:
  // the burn-in GEMM runs one OpenBLAS thread per rank (workloads/burnin.cpp), whatever the rank's share.
  if (backend.kind() == BackendKind::host && o.size > 0) {
    const auto& peak = session.peak();
    if (const auto rank_peak = peak.for_dtype("fp32"); rank_peak && *rank_peak > 0) {
      const double one_core = *rank_peak / std::max(1.0, peak.cores);
      const double seconds = workloads::gemm_flops(o.size, o.size, o.size) / (one_core * 1e12);
      const double interval = o.duration_s / checks;
      if (seconds > std::max(interval, 1.0))
        throw usage_error(fmt::format(
            "invalid --size {}: one fp32 GEMM takes at least {} at one core's peak of {:.3g} TFLOP/s (the "
            "burn-in runs one thread per rank), longer than a check interval ({}): a smaller --size, or a "
            "longer --check-interval and --duration",
            o.size, format_duration(seconds), one_core, format_duration(interval)));
    }
  }
  auto report = session.begin_report();
  // A burn-in of hours stopped by a time limit keeps what it checked: every check is gathered from every
  // rank as it is taken (workloads/burnin.hpp), so rank 0 writes each node's verdict over the checks done,
  // a node that already mismatched failed, with the verdict fail and the signal the reason; inside a suite,
  // the step's results so far (tools/interrupt_report.hpp).
  o.so_far = std::make_shared<workloads::BurninSoFar>();
  o.on_check = [&session] { session.save_so_far(); };  // -o keeps it even if the job is killed
  const auto so_far = [checked = o.so_far, start = report, duration = o.duration_s] {
    auto out = start;
    const auto run = checked->snapshot();
    if (run.checks_done() >= 0) out.results = workloads::burnin_results(run);
    out.summary["burnin"] = burnin_summary(run);
    out.summary["burnin"]["verdict"] = "fail";
    out.summary["burnin"]["duration_s"] = duration;
    out.summary["burnin"]["reason"] = "interrupted before the run ended";
    if (run.checks_done() < 0) out.summary["burnin"].erase("size");  // not started: nothing measured
    return out;
  };
  const auto print = [](const reports::Report& r) {
    reports::print_burnin_report(std::cout, r);
    std::cout.flush();
  };
  // A rank that hangs under the load (a wedged GPU) is named by the watchdog, "rank 2 (host, GPU 0) never
  // entered burnin_check #4", and the job ends with the checks so far, instead of waiting for the
  // scheduler's time limit; in a suite the suite's report says it (Session::hang_report).
  auto on_end = session.hang_report(so_far);
  if (!session.in_suite())
    on_end = [make = std::move(on_end)](const reports::Result& ending) {
      auto out = make(ending);
      if (out)
        out->summary["burnin"]["reason"] =
            (ending.name == "hang" ? "hang: " : "") + ending.error.value_or("");
      return out;
    };
  std::optional<InterruptReport> interrupted;
  if (session.in_suite())
    interrupted.emplace(session, "burnin", so_far, print);
  else
    interrupted.emplace(session, "burnin", on_end, "the checks before it are kept", std::string(),
                        [so_far, print] { print(so_far()); });
  std::function<void()> print_so_far;
  if (mpi.is_root() && !session.options().quiet) print_so_far = [so_far, print] { print(so_far()); };
  CommandHangWatchdog watchdog(mpi, "burnin", report.run.value("id", std::string("run")), std::move(on_end),
                               session.options().output, cli.run_dir, hang_timeout, std::move(print_so_far));
  const auto run = workloads::run_burnin(mpi, backend, o);
  interrupted.reset();
  watchdog.finish();
  report.results = workloads::burnin_results(run);
  report.summary["burnin"] = burnin_summary(run);
  session.finish(report);
  if (mpi.is_root() && !session.options().quiet) {
    reports::print_burnin_report(std::cout, report);
    std::cout.flush();
  }
  return run.pass() ? 0 : 1;
}

}  // namespace

Command add_burnin_command(CLI::App& app) {
  auto opt = std::make_shared<BurninCliOptions>();
  auto* sub = app.add_subcommand("burnin",
                                 "Sustained GEMMs on every rank with periodic silent-data-corruption checks "
                                 "(identical seeded inputs must\n"
                                 "give bit-identical results across repeats and across ranks of one device "
                                 "model). Exit 0 pass, 1 fail.");
  sub->add_option("--duration", opt->duration, "How long to run (10s, 20m, 2h)")->capture_default_str();
  sub->add_option("--check-interval", opt->check_interval,
                  "Time between SDC checks (default: a tenth of --duration)");
  add_count_option(*sub, "--size", opt->size, "GEMM m = n = k (default 8192 on cuda, 256 on host)");
  add_hang_watchdog_options(*sub, opt->hang_timeout, opt->run_dir, "the burn-in");
  return {sub,
          [opt, sub](Session& s) {
            opt->run_dir_given = sub->count("--run-dir") > 0;
            return run_burnin_command(*opt, s);
          },
          true};
}

}  // namespace fb::tools
