// factorybench health: a seconds-long pre-flight check of every rank, one line per rank, exit 1 when any
// rank fails (workloads/health_check.hpp, docs/health.md).
#include <cstdlib>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/rank_collectives.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"
#include "reports/health_console.hpp"
#include "tools/command_hang_watchdog.hpp"
#include "tools/commands.hpp"
#include "tools/count_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/report_so_far.hpp"
#include "workloads/gemm_flops.hpp"
#include "workloads/health_check.hpp"

namespace fb::tools {
namespace {

struct HealthCliOptions {
  std::string expect_gpu;
  std::optional<double> gemm_floor;
  std::optional<double> allreduce_floor;
  std::int64_t gemm_size = 0;
  std::string allreduce_size;
  std::string checkpoint_dir = "./";
  std::string checkpoint_size;
  double min_free_memory = 0.5;
  std::string hang_timeout = "5m";
  std::string run_dir = ".";
  bool run_dir_given = false;
};

// The test hooks name a rank in the environment, so their failure paths can be exercised on any machine:
// FACTORYBENCH_TEST_READONLY_CKPT_RANK=R makes rank R check a read-only directory instead of
// --checkpoint-dir; FACTORYBENCH_TEST_SLOW_GEMM_RANK=R makes rank R run every health GEMM several times.
std::optional<int> hook_rank_from_env(const char* name) {
  const char* env = std::getenv(name);
  if (!env || !*env) return std::nullopt;
  char* end = nullptr;
  const long r = std::strtol(env, &end, 10);
  if (*end != '\0' || r < 0)
    throw usage_error(fmt::format("invalid {} '{}': expected a rank number", name, env));
  return static_cast<int>(r);
}

int run_health(const HealthCliOptions& cli, Session& session) {
  workloads::HealthOptions o;
  o.expect_gpu = cli.expect_gpu;
  o.gemm_floor = cli.gemm_floor;
  o.allreduce_floor_gbps = cli.allreduce_floor;
  o.gemm_size = cli.gemm_size;
  if (!cli.allreduce_size.empty()) o.allreduce_bytes = parse_size(cli.allreduce_size, "--allreduce-size");
  if (!cli.checkpoint_size.empty()) o.checkpoint_bytes = parse_size(cli.checkpoint_size, "--checkpoint-size");
  if (!cli.allreduce_size.empty() && o.allreduce_bytes == 0)
    throw usage_error("invalid --allreduce-size '" + cli.allreduce_size + "': must be positive");
  if (!cli.checkpoint_size.empty() && o.checkpoint_bytes == 0)
    throw usage_error("invalid --checkpoint-size '" + cli.checkpoint_size + "': must be positive");
  o.checkpoint_dir = cli.checkpoint_dir;
  o.min_free_memory = cli.min_free_memory;
  o.readonly_checkpoint_rank = hook_rank_from_env("FACTORYBENCH_TEST_READONLY_CKPT_RANK");
  o.slow_gemm_rank = hook_rank_from_env("FACTORYBENCH_TEST_SLOW_GEMM_RANK");
  o.seed = session.options().seed;
  workloads::validate_health_options(o);

  const double hang_timeout = parse_command_hang_timeout(cli.hang_timeout, cli.run_dir_given);
  auto& mpi = session.mpi();
  check_injection_for(session, "health", {.communicator = true, .point_to_point = false});
  for (const auto& [name, rank] :
       {std::pair{"FACTORYBENCH_TEST_READONLY_CKPT_RANK", o.readonly_checkpoint_rank},
        std::pair{"FACTORYBENCH_TEST_SLOW_GEMM_RANK", o.slow_gemm_rank}})
    if (rank && *rank >= mpi.size())
      throw usage_error(fmt::format("{} {}: the job has ranks 0..{}", name, *rank, mpi.size() - 1));
  check_hang_run_dir(session, cli.run_dir, hang_timeout);
  if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
  auto& backend = session.backend();
  // A check in seconds: on the host, a --gemm-size whose one call takes over 30 s at this host's measured
  // peak (16K and up on the CI machine) would leave the job silent for many minutes; refused at once.
  if (backend.kind() == BackendKind::host && o.gemm_size > 0) {
    const auto type = std::string(to_string(backend.defaults().gemm.dtype));
    if (const auto peak = session.peak().for_dtype(type); peak && *peak > 0) {
      const double seconds = workloads::gemm_flops(o.gemm_size, o.gemm_size, o.gemm_size) / (*peak * 1e12);
      constexpr double kMaxCallSeconds = 30;
      if (seconds > kMaxCallSeconds)
        throw usage_error(fmt::format(
            "invalid --gemm-size {}: one {} GEMM takes at least {} at this host's peak of {:.3g} TFLOP/s, "
            "and "
            "the health check runs it many times; at most {} a call here (a smaller --gemm-size, or a GPU)",
            o.gemm_size, type, format_duration(seconds), *peak, format_duration(kMaxCallSeconds)));
    }
  }
  // A given --allreduce-size must fit: the check holds two buffers on the device and its input and output on
  // the host (on the host backend the same memory: four). One that does not is the input's fault, refused on
  // every rank alike, not a node failed for it (std::bad_alloc). The default size is not refused: a node
  // short of memory for it fails its checks, as it should.
  if (!cli.allreduce_size.empty()) {
    const bool same_memory = backend.kind() == BackendKind::host;
    const auto device_free =
        allreduce(mpi, static_cast<std::uint64_t>(backend.free_memory_bytes()), RankReduce::min);
    const auto host_free = allreduce(mpi, host_memory_available_per_rank(mpi.local_size()), RankReduce::min);
    const auto refuse = [&](std::uint64_t need, std::uint64_t free, const char* where) {
      if (need > free)
        throw usage_error(
            fmt::format("invalid --allreduce-size {}: the all-reduce check needs {} of {} memory "
                        "per rank, but only {} is free",
                        cli.allreduce_size, format_bytes(need), where, format_bytes(free)));
    };
    if (same_memory) {
      refuse(4 * o.allreduce_bytes, device_free, "host");
    } else {
      refuse(2 * o.allreduce_bytes, device_free, "device");
      refuse(2 * o.allreduce_bytes, host_free, "host");
    }
  }
  auto report = session.begin_report();
  // A rank that hangs (a wedged GPU or NIC) is named, and the job ends, instead of waiting for the
  // scheduler's time limit.
  // Alone, the hang's report carries the verdict CI reads (summary.health.verdict) as a failed check's does;
  // no rank is failed for it (the stuck rank and its waiting peers look alike to a drain). In a suite the
  // suite's summary says it.
  // Ctrl-C or a time limit (tools/interrupt_report.hpp) likewise: verdict fail, the signal the reason.
  // Either report keeps every rank's checks before it (each check is gathered as it is taken), alone and in
  // a suite, and a rank that failed one of them is failed (a node that failed its GEMM before the hang is
  // drained as it would have been without it).
  const auto so_far = ReportSoFar::make(report);
  if (mpi.is_root())
    o.on_checks = [so_far, start = report, o, world = mpi.size(),
                   &session](const std::vector<workloads::RankHealth>& ranks) {
      workloads::HealthRun partial;
      partial.ranks = ranks;
      for (const auto& r : ranks) partial.verdicts.push_back(r.verdict);
      auto out = start;
      out.results = workloads::health_results(partial);
      out.summary["health"] = workloads::health_summary(partial, o);
      out.summary["health"]["ranks_total"] = world;
      out.summary["health"]["checks_done"] = ranks.empty() ? 0 : ranks.front().checks.size();
      so_far->set(out);
      session.save_so_far();  // -o keeps it even if the job is killed (tools/interrupt_report.hpp)
    };
  auto on_hang = session.hang_report(ReportSoFar::reader(so_far));
  if (!session.in_suite())
    on_hang = [make = std::move(on_hang), world = mpi.size()](const reports::Result& ending) {
      auto out = make(ending);
      if (!out) return out;
      auto& health = out->summary["health"];
      if (!health.is_object())  // stopped before the first check was gathered
        health = {{"ranks_total", world}, {"ranks_failed", nlohmann::json::array()}, {"checks_done", 0}};
      health["verdict"] = "fail";
      health["reason"] = (ending.name == "hang" ? "hang: " : "") + ending.error.value_or("");
      return out;
    };
  // The console says it too, before the hang's diagnosis or the signal's line: a rank that failed a check
  // before it, and the ranks not finished.
  std::function<void()> print_so_far;
  if (mpi.is_root() && !session.options().quiet)
    print_so_far = [read = ReportSoFar::reader(so_far)] {
      const auto r = read();
      if (!r.summary.contains("health")) return;  // no check gathered yet
      reports::print_health_report(std::cout, r);
      std::cout.flush();
    };
  std::optional<InterruptReport> interrupted;
  if (!session.in_suite())
    interrupted.emplace(session, "health", on_hang, "the checks before it are kept", std::string(),
                        print_so_far);
  else
    session.set_step_so_far(ReportSoFar::reader(so_far));
  CommandHangWatchdog watchdog(mpi, "health", report.run.value("id", std::string("run")), std::move(on_hang),
                               session.options().output, cli.run_dir, hang_timeout, print_so_far);
  const auto run = workloads::run_health_checks(mpi, backend, session.peak(), o, session.telemetry());
  interrupted.reset();
  watchdog.finish();
  if (mpi.is_root()) {
    report.results = workloads::health_results(run);
    report.summary["health"] = workloads::health_summary(run, o);
  }
  session.finish(report);
  if (mpi.is_root() && !session.options().quiet) {
    reports::print_health_report(std::cout, report);
    std::cout.flush();
  }
  // Every rank knows every verdict, so every rank exits alike.
  return run.passed() ? 0 : 1;
}

}  // namespace

Command add_health_command(CLI::App& app) {
  auto opt = std::make_shared<HealthCliOptions>();
  auto* sub = app.add_subcommand(
      "health",
      "Pre-flight check of every rank in seconds: device, memory, ECC, row remaps, a short GEMM, clocks,\n"
      "slowdown reasons, an exact all-reduce (optionally against a job-level busbw floor) and the "
      "checkpoint\n"
      "directory. Exit 0 all pass, 1 any fail.");
  sub->add_option("--expect-gpu", opt->expect_gpu,
                  "Fail unless every rank's GPU is this model (A100, H100, GH200, H200, B200, GB200 or "
                  "GB300; several, any of which passes: H100,H200)");
  sub->add_option(
      "--gemm-floor", opt->gemm_floor,
      "Fail the GEMM below this fraction of the expected throughput (MAMF on GPUs, the job's median "
      "rank on the host). Default: the device class's floor in configs/hardware (0.8 GPUs, 0.5 host)");
  add_count_option(*sub, "--gemm-size", opt->gemm_size, "GEMM m = n = k (default 8192 on cuda, 768 on host)");
  sub->add_option("--allreduce-size", opt->allreduce_size,
                  "All-reduce size (default 256M on cuda, 4M on host)");
  sub->add_option("--allreduce-floor", opt->allreduce_floor,
                  "Fail the job (exit 1, no node failed) when the median all-reduce busbw is below this many "
                  "GB/s: a slow rank or link slows every rank; `locate` finds it. Default: no floor");
  sub->add_option("--checkpoint-dir", opt->checkpoint_dir, "Directory checkpoints will be written to")
      ->capture_default_str();
  sub->add_option("--checkpoint-size", opt->checkpoint_size,
                  "Bytes written and fsync'ed to measure it (default 256M on cuda, 32M on host)");
  sub->add_option("--min-free-memory", opt->min_free_memory,
                  "Fail below this fraction of device (host) memory free; warn below 0.9")
      ->capture_default_str();
  add_hang_watchdog_options(*sub, opt->hang_timeout, opt->run_dir, "the check");
  // The design's `health --floors CLASS` became the device class's GEMM floor and an opt-in job-level
  // all-reduce floor: the fabric floors of configs/floors were published for large all-reduces, and health's
  // short one would fail healthy nodes against them (docs/health.md). Hidden, and refused while the words are
  // parsed (so also in a suite's steps and --preflight-args) with where the floors are, not "not expected".
  sub->add_option("--floors")
      ->group("")
      ->check(CLI::Validator(
          [](std::string& value) {
            return fmt::format(
                "health takes no --floors ('{}'): its GEMM floor is the device class's (configs/hardware; "
                "--gemm-floor F overrides it) and its all-reduce floor is --allreduce-floor GBPS; the fabric "
                "floors of configs/floors are locate's (factorybench locate --floors NAME)",
                value);
          },
          "", ""));
  return {sub,
          [opt, sub](Session& s) {
            opt->run_dir_given = sub->count("--run-dir") > 0;
            return run_health(*opt, s);
          },
          true};
}

}  // namespace fb::tools
