// factorybench collective: nccl-tests' measurements (same S, algbw, busbw, -a, in-place) for every
// collective in one binary, on NCCL (cuda) or MPI (host), with an exact --check, a --min-busbw gate,
// sub-communicators (--split) and MoE dispatch/combine traffic.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/communicator.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/units.hpp"
#include "reports/collective_console.hpp"
#include "tools/command_hang_watchdog.hpp"
#include "tools/commands.hpp"
#include "tools/count_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/live_table.hpp"
#include "tools/report_so_far.hpp"
#include "workloads/collective_benchmark.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/run_environment.hpp"

namespace fb::tools {
namespace {

struct CollectiveCliOptions {
  std::string op = "allreduce";
  std::string dtype = "fp32";
  std::string redop = "sum";
  int root = 0;
  std::string min_bytes = "32M", max_bytes = "32M", step_bytes;
  std::uint64_t factor = 2;
  int iters = 20, warmup = 5, average = 1;
  bool inplace = false, check = false, no_check = false;
  std::optional<double> min_busbw;
  int split = 0;
  std::optional<std::uint64_t> moe_tokens, hidden;
  std::optional<int> experts, top_k;
  double skew = 0;
  std::string hang_timeout = "10m";
  std::string run_dir = ".";
  // Given on the command line (not defaulted): an option that cannot act on the chosen ops is refused.
  bool sizes_given = false, redop_given = false, root_given = false, run_dir_given = false;
};

// "allreduce, reducescatter and reduce": the ops of the table with `has`.
std::string ops_with(bool workloads::CollectiveInfo::*has) {
  std::vector<std::string_view> names;
  for (const auto& info : workloads::all_collectives())
    if (info.*has) names.push_back(info.name);
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + std::string(names[i]);
  return out;
}

workloads::CollectiveOptions resolve(const CollectiveCliOptions& cli, std::uint64_t seed) {
  workloads::CollectiveOptions o;
  if (cli.op == "all") {
    o.ops.clear();
    for (const auto& info : workloads::all_collectives()) o.ops.push_back(info.op);
  } else {
    o.ops = {workloads::parse_collective(cli.op)};
  }
  try {
    o.type = parse_dtype(cli.dtype);
  } catch (const Error& e) {
    throw usage_error(std::string("--dtype: ") + e.what());
  }
  // tf32 is a GEMM compute mode, stored as fp32: a collective moves fp32, and rows labelled tf32 would be
  // fp32 figures under another name.
  if (o.type == DType::tf32)
    throw usage_error(
        "invalid --dtype tf32: a GEMM compute mode, not a type collectives move; its data is fp32 "
        "(use -d fp32)");
  o.redop = parse_reduce_op(cli.redop);
  const auto any_op = [&](bool workloads::CollectiveInfo::*has) {
    return std::any_of(o.ops.begin(), o.ops.end(),
                       [&](workloads::CollectiveOp op) { return workloads::collective_info(op).*has; });
  };
  if (cli.redop_given && !any_op(&workloads::CollectiveInfo::reduces))
    throw usage_error(fmt::format("--redop acts only on {}; --op {} does not reduce",
                                  ops_with(&workloads::CollectiveInfo::reduces), cli.op));
  if (cli.root_given && !any_op(&workloads::CollectiveInfo::rooted))
    throw usage_error(fmt::format("--root acts only on {}; --op {} has no root",
                                  ops_with(&workloads::CollectiveInfo::rooted), cli.op));
  o.root = cli.root;
  o.min_bytes = parse_size(cli.min_bytes, "-b/--minbytes");
  o.max_bytes = parse_size(cli.max_bytes, "-e/--maxbytes");
  o.step = cli.step_bytes.empty() ? 0 : parse_size(cli.step_bytes, "-i/--stepbytes");
  if (!cli.step_bytes.empty() && o.step == 0)
    throw usage_error("invalid -i/--stepbytes 0: must be at least 1 byte");
  o.factor = cli.factor;
  o.iters = cli.iters;
  o.warmup = cli.warmup;
  o.average = static_cast<workloads::TimeAverage>(cli.average);
  o.inplace = cli.inplace;
  // Verified by default, as nccl-tests (-c 1) and DESIGN.md's contract do; --no-check for pure timing.
  o.check = !cli.no_check;
  o.min_busbw_gbps = cli.min_busbw;
  o.split = cli.split;
  o.seed = seed;
  const bool any_moe = cli.hidden || cli.experts || cli.top_k || cli.skew != 0;
  if (cli.moe_tokens) {
    if (!cli.experts || !cli.top_k) throw usage_error("--moe-tokens needs --experts and --top-k");
    if (cli.sizes_given)
      throw usage_error(
          "-b, -e, -f and -i do not apply to --moe-tokens: its message sizes follow from --moe-tokens, "
          "--hidden and --top-k");
    // Routing tables are built token by token before any buffer is sized: bound them first (an unsigned
    // option also reads -5 as 2^64 - 5, which ran for hours).
    const auto bounded = [](const char* option, std::uint64_t v, std::uint64_t max) {
      if (v < 1 || v > max)
        throw usage_error(fmt::format("invalid {} {}: must be in [1, {}]", option, v, max));
    };
    bounded("--moe-tokens", *cli.moe_tokens, std::uint64_t{1} << 24);
    if (cli.hidden) bounded("--hidden", *cli.hidden, std::uint64_t{1} << 20);
    workloads::MoeRouting m;
    m.tokens = *cli.moe_tokens;
    m.hidden = cli.hidden.value_or(7168);  // DeepSeek-V3's hidden size, the DeepEP benchmark default
    m.experts = *cli.experts;
    m.top_k = *cli.top_k;
    m.skew = cli.skew;
    m.seed = seed;
    o.moe = m;
  } else if (any_moe) {
    throw usage_error("--hidden, --experts, --top-k and --skew describe MoE traffic and need --moe-tokens");
  }
  return o;
}

int run_collective(const CollectiveCliOptions& cli, Session& session) {
  workloads::CollectiveOptions options = resolve(cli, session.options().seed);
  auto& mpi = session.mpi();
  // Everything that needs no communication is checked before the backend (and any device) is touched.
  workloads::validate_collective_options(options, mpi.size());
  const double hang_timeout = parse_command_hang_timeout(cli.hang_timeout, cli.run_dir_given);
  // FACTORYBENCH_INJECT against this job: a rank outside it is refused; run alone, so is a slow link with no
  // sendrecv to act on or an sdc (burn-in's: no check here flips a bit), rather than testing nothing. A suite
  // step acts on the entries it can (tools/injection_scope.hpp).
  const bool sendrecv = std::find(options.ops.begin(), options.ops.end(),
                                  workloads::CollectiveOp::sendrecv) != options.ops.end();
  check_injection_for(session, "collective",
                      {.communicator = true, .point_to_point = sendrecv, .collective_check = options.check});
  workloads::check_wrong_injection_fits(options, mpi.size());
  check_hang_run_dir(session, cli.run_dir, hang_timeout);
  if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
  // Rank 0 prints each size as soon as it is measured, as nccl-tests does: the log shows the sweep live and
  // keeps its rows however the job ends. --split's groups are measured together and their rows interleave,
  // so their tables are printed whole at the end.
  const bool console = mpi.is_root() && !session.options().quiet;
  const auto live = LiveTable<reports::CollectiveTableStream>::make();
  const auto engine_name = std::make_shared<std::string>("?");  // known once every check has passed
  // By value: a suite's signal may close the table after this function has returned.
  const auto first_line = [ranks = mpi.size(), iters = options.iters, warmup = options.warmup,
                           average = cli.average](std::string_view engine) {
    return fmt::format(
        "# factorybench collective: {} rank(s), {} engine, {} iters after {} warm-up, time = mean, ranks "
        "combined by -a {}\n",
        ranks, engine, iters, warmup, average);
  };
  // The end of the table, whatever ends the run (its end, a hang, a signal), under live->mutex: the row
  // waiting for its in-place twin and the footer, or with --split the whole table.
  const auto close_table = [console, live, engine_name,
                            first_line](std::span<const reports::Result> results) {
    if (std::exchange(live->closed, true)) return false;
    if (live->table) {
      live->table->finish(results);
    } else if (console) {
      std::cout << first_line(*engine_name);
      reports::print_collective_table(std::cout, results);
      std::cout.flush();
    }
    return true;
  };
  // After every check, the free-memory one in the run included (a refused input gets its one line alone),
  // before the first measurement.
  options.on_checked = [thin = workloads::few_samples_warning(cli.iters, cli.warmup),
                        stream = console && options.split == 0, inplace = options.inplace, live, engine_name,
                        first_line](std::string_view name) {
    if (!thin.empty()) log::warn("{}", thin);
    std::lock_guard lock(live->mutex);
    *engine_name = name;
    if (!stream) return;
    std::cout << first_line(name) << std::flush;  // a log read now shows the run has started
    live->table.emplace(std::cout, inplace);
  };
  auto report = session.begin_report();
  auto& backend = session.backend();  // starts the telemetry sampler with the device
  options.telemetry = session.telemetry();
  // A rank that never enters a collective, or never leaves one (a wedged NIC or GPU), is named and the job
  // ends (exit 1, the report so far plus a failed "hang" result) instead of waiting for the scheduler's
  // limit. The sizes measured before the hung call are kept: each result as rank 0 makes it.
  const auto so_far = ReportSoFar::make(report);
  options.on_result = [so_far, live, &session](const reports::Result& r) {
    so_far->add(r);
    {
      std::lock_guard lock(live->mutex);
      if (live->table) live->table->add(r);
    }
    session.save_so_far();  // -o keeps it even if the job is killed (tools/interrupt_report.hpp)
  };
  CommandHangWatchdog watchdog(mpi, "collective", report.run.value("id", std::string("run")),
                               session.hang_report(ReportSoFar::reader(so_far)), session.options().output,
                               cli.run_dir, hang_timeout,
                               [live, close_table, read = ReportSoFar::reader(so_far)] {
                                 std::lock_guard lock(live->mutex);
                                 close_table(read().results);
                               });
  // Ctrl-C or a time limit keeps the sizes measured so far, as a hang does.
  std::optional<InterruptReport> interrupted;
  interrupted.emplace(
      session, "collective", ReportSoFar::reader(so_far), [live, close_table](const reports::Report& r) {
        std::lock_guard lock(live->mutex);
        if (close_table(r.results))
          std::cout << "# factorybench collective: stopped by a signal after the sizes above\n";
      });
  workloads::CollectiveRun run = workloads::run_collective_benchmark(options, mpi, backend);
  interrupted.reset();  // measured: a signal from here on ends the run as before
  watchdog.finish();
  for (auto& r : run.results) report.results.push_back(std::move(r));
  report.summary = run.summary;
  {
    std::lock_guard lock(live->mutex);
    close_table(report.results);
  }
  return session.finish(report);
}

}  // namespace

Command add_collective_command(CLI::App& app) {
  auto opt = std::make_shared<CollectiveCliOptions>();
  auto* sub = app.add_subcommand("collective",
                                 "Collective bandwidth (nccl-tests semantics): NCCL on cuda, MPI on host");
  sub->add_option("--op", opt->op,
                  "allreduce (default), allgather, reducescatter, alltoall, alltoallv, broadcast, reduce, "
                  "sendrecv or all");
  sub->add_option("-b,--minbytes", opt->min_bytes, "Smallest size S (units: 8, 64K, 1M, 8G)")
      ->capture_default_str();
  sub->add_option("-e,--maxbytes", opt->max_bytes, "Largest size S")->capture_default_str();
  auto* factor =
      sub->add_option("-f,--stepfactor", opt->factor, "Multiply the size by this factor between steps (>= 2)")
          ->capture_default_str();
  sub->add_option("-i,--stepbytes", opt->step_bytes, "Grow the size by this many bytes instead of -f")
      ->excludes(factor);
  sub->add_option("-n,--iters", opt->iters, "Timed iterations per size")->capture_default_str();
  sub->add_option("-w,--warmup", opt->warmup, "Untimed iterations before timing")->capture_default_str();
  sub->add_option("-d,--dtype", opt->dtype, "fp32, fp16, bf16, fp8_e4m3, fp8_e5m2, fp64, int32, int8")
      ->capture_default_str();
  sub->add_option("--redop", opt->redop, "Reduction of the reducing ops: sum, max, min or avg")
      ->capture_default_str();
  sub->add_option("-r,--root", opt->root, "Root rank of broadcast and reduce")->capture_default_str();
  // Checked as it is read, in the words of every other bad value (CLI11's Range said "Value 7 not in range").
  sub->add_option_function<int>(
         "-a,--average",
         [cli = opt.get()](int v) {
           if (v < 0 || v > 3)
             throw CLI::ValidationError(
                 fmt::format("invalid -a/--average {}: expected 0 (rank 0's time), 1 (the mean), 2 (the min) "
                             "or 3 (the max)",
                             v));
           cli->average = v;
         },
         "Combine the ranks' times: 0 rank 0, 1 mean, 2 min, 3 max (nccl-tests -a)")
      ->default_str(std::to_string(opt->average));
  sub->add_flag("--inplace", opt->inplace, "Also measure in place (send buffer = receive buffer)");
  auto* check = sub->add_flag("-c,--check", opt->check,
                              "Verify results from exactly predictable inputs; any wrong element fails (the "
                              "default)");
  sub->add_flag("--no-check", opt->no_check,
                "Do not verify (one run per size with predictable inputs, after the timed ones, is left out)")
      ->excludes(check);
  sub->add_option("--min-busbw", opt->min_busbw, "Fail (exit 1) when the average busbw is below this (GB/s)");
  add_count_option(*sub, "--split", opt->split,
                   "Run inside groups of N consecutive ranks, each reported separately (default: the world)");
  sub->add_option("--moe-tokens", opt->moe_tokens, "alltoallv: MoE dispatch/combine with T tokens per rank");
  sub->add_option("--hidden", opt->hidden, "MoE: elements per token (default 7168)");
  sub->add_option("--experts", opt->experts, "MoE: routed experts, spread evenly over the ranks");
  sub->add_option("--top-k", opt->top_k, "MoE: experts per token");
  sub->add_option("--skew", opt->skew, "MoE: Zipf exponent of expert popularity (0 = uniform)");
  add_hang_watchdog_options(*sub, opt->hang_timeout, opt->run_dir, "the run");
  return {sub,
          [opt, sub](Session& s) {
            opt->sizes_given = sub->count("--minbytes") + sub->count("--maxbytes") +
                                   sub->count("--stepfactor") + sub->count("--stepbytes") >
                               0;
            opt->redop_given = sub->count("--redop") > 0;
            opt->root_given = sub->count("--root") > 0;
            opt->run_dir_given = sub->count("--run-dir") > 0;
            return run_collective(*opt, s);
          },
          true};
}

}  // namespace fb::tools
