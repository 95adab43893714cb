// factorybench suite FILE: several benchmarks in one MPI job, one combined report. Each step is parsed
// with the same command table as the command line, so a suite step is exactly what a user would type.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/config_paths.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/json_file.hpp"
#include "core/logging.hpp"
#include "core/rank_collectives.hpp"
#include "core/units.hpp"
#include "reports/headline.hpp"
#include "reports/report_json.hpp"
#include "reports/suite_step_extra.hpp"
#include "tools/commands.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/shell_words.hpp"
#include "tools/suite_file.hpp"
#include "tools/suite_run_dirs.hpp"
#include "workloads/run_environment.hpp"

namespace fb::tools {
namespace {

struct SuiteOptions {
  std::string file;
  bool fail_fast = false;
  bool list = false;
};

// Validates every step that can validate alone (an unknown model, an impossible layout, a missing preset, a
// bad fault plan) before anything runs: the suite stops with the step's error and writes no report. The
// checks run no collective; the ranks agree on the outcome after them, so an input that only some ranks
// lack (a file missing on one host) stops every rank instead of leaving the others in step 1's collectives.
// The checks that need every rank (Session::check_together: the same model file on all, the smallest free
// memory) run after that agreement, when every rank is sure to reach them.
void preflight(const Suite& suite, const std::vector<ParsedStep>& parsed, Session& session) {
  struct CheckingOnly {  // for the checks alone, however they end
    Session& s;
    explicit CheckingOnly(Session& session) : s(session) { s.set_checking_only(true); }
    ~CheckingOnly() { s.set_checking_only(false); }
  };
  const auto in_step = [&](std::size_t i, const std::function<void()>& check) {
    try {
      check();
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::runtime) throw;
      throw Error(e.kind(), fmt::format("suite step '{}': {}", suite.steps[i].name, e.what()));
    }
  };
  auto& mpi = session.mpi();
  const CheckingOnly checking(session);
  std::vector<std::pair<std::size_t, std::function<void()>>> together;
  agree_on_errors(mpi, [&] {
    // The variable is the job's, not a step's: a rank outside the job is the suite's error (it was blamed
    // on the first step, a gemm that takes no injection).
    check_injected_ranks(injected_faults(), mpi.size());
    for (std::size_t i = 0; i < parsed.size(); ++i) {
      if (!parsed[i].preflight) continue;
      in_step(i, [&] { parsed[i].action(session); });
      for (auto& check : session.take_checks_together()) together.emplace_back(i, std::move(check));
    }
    // Between steps: one that leaves checkpoints in a run dir where a later one starts fresh.
    check_shared_run_dirs(suite, parsed);
  });
  for (const auto& step_check : together)
    agree_on_errors(mpi, [&] { in_step(step_check.first, step_check.second); });
}

// A step's own verdict result (benchmark "suite", named for the step, its args as params).
reports::Result step_result(const SuiteStep& step) {
  reports::Result r;
  r.benchmark = "suite";
  r.name = step.name;
  r.params = {{"args", step.args}};
  reports::write_suite_step(r, step.name);
  return r;
}

// The suite's report as it stands if the job ends inside step `index` (0-based): the steps before it as they
// ran, this one failed with `ending` (the hang the watchdog found, or "did not finish"), the rest not run.
// `measured`: what the step measured before it ended (a hang, a signal), kept before its ending result.
reports::Report report_ending_in(reports::Report so_far, nlohmann::json step_log, const Suite& suite,
                                 std::size_t index, reports::Result ending,
                                 std::vector<reports::Result> measured = {}) {
  const auto& step = suite.steps[index];
  append_step_results(so_far, std::move(measured), step.name);
  reports::write_suite_step(ending, step.name);
  so_far.results.push_back(std::move(ending));
  step_log.push_back({{"name", step.name}, {"args", step.args}, {"exit_code", nullptr}, {"ended_job", true}});
  for (std::size_t k = index + 1; k < suite.steps.size(); ++k) {
    auto rest = step_result(suite.steps[k]);
    rest.status = reports::Status::skipped;
    rest.error = fmt::format("not run: the job ended during step '{}'", step.name);
    so_far.results.push_back(std::move(rest));
    step_log.push_back({{"name", suite.steps[k].name},
                        {"args", suite.steps[k].args},
                        {"exit_code", nullptr},
                        {"skipped", true}});
  }
  so_far.summary["suite"]["steps"] = std::move(step_log);
  so_far.summary["suite"]["verdict"] = "fail";
  return so_far;
}

// The suite as words: its name, then each step's name and arguments, a step ending in "\x1e" (no argument
// is that) so that moving an argument between steps changes the digest.
std::uint64_t suite_digest(const Suite& suite) {
  std::vector<std::string> words{suite.name};
  for (const auto& step : suite.steps) {
    words.push_back(step.name);
    words.insert(words.end(), step.args.begin(), step.args.end());
    words.emplace_back("\x1e");
  }
  return MpiContext::words_digest(words);
}

// Every step argument, and the value of each --option=value: those that name a file are the steps' inputs.
std::vector<std::string> step_arguments(const Suite& suite) {
  std::vector<std::string> out;
  for (const auto& step : suite.steps)
    for (const auto& a : step.args) {
      out.push_back(a);
      if (const auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos)
        out.push_back(a.substr(eq + 1));
    }
  return out;
}

int run_suite(const SuiteOptions& opt, Session& session) {
  const Suite suite = load_suite(opt.file);
  // Parse every step before running any: a typo in step 5 should not cost steps 1-4.
  std::vector<ParsedStep> parsed;
  for (const auto& step : suite.steps) parsed.push_back(parse_suite_step(step));
  if (opt.list) {
    if (!session.options().output.empty())
      throw usage_error("--list prints the steps and writes no report: leave out -o/--output");
    if (opt.fail_fast)
      throw usage_error("--list prints the steps and runs none: --fail-fast does nothing with it");
    if (session.is_root())
      for (const auto& step : suite.steps) {
        std::string line = "factorybench";
        for (const auto& a : step.args) line += " " + shell_quote(a);  // pastes into a shell as it ran
        std::cout << step.name << ": " << line << "\n";
      }
    return 0;
  }

  // MPI (and the -o check) first: their errors are the suite's, not a step's. The steps' files are known
  // before it, for the start-up report written before MPI's start.
  session.add_output_inputs(step_arguments(suite));
  auto& mpi = session.mpi();
  // The arguments are the same on every rank (checked with MPI's start), but a suite read from each host's
  // configs may not be: ranks running different steps would wait in each other's collectives for ever.
  mpi.require_same_content(suite_digest(suite), "suite files (" + opt.file + ")");
  // The report is written to -o before each step (so a hang loses nothing): a step's input there would be
  // replaced before the step reads it.
  agree_on_errors(mpi, [&] {
    if (session.is_root()) session.check_output_writable(step_arguments(suite));
  });
  // --backend cuda on a node without a usable GPU (or in a build without it) stops here, as a single command
  // would, rather than failing every step (the steps share this backend; creating it now costs nothing
  // later). Before the preflight: a step's check against the backend named (an engine it cannot run) is
  // then reached only where that backend runs, as in the command alone, which starts it first.
  if (parse_backend_choice(session.options().backend) == BackendChoice::cuda)
    agree_on_errors(mpi, [&] { session.backend(); });
  preflight(suite, parsed, session);
  auto report = session.begin_report(false);
  // The backend the steps run on, named before the first ends (a job killed in step 1 reported "none"):
  // the one chosen with --backend host or cuda; `auto` is resolved by the first step that needs a device.
  if (const auto choice = parse_backend_choice(session.options().backend); choice != BackendChoice::automatic)
    report.run["backend"] = choice == BackendChoice::cuda ? "cuda" : "host";
  report.summary["suite"] = {{"name", suite.name}, {"description", suite.description}};
  int rc = 0;
  std::size_t index = 0;
  nlohmann::json step_log = nlohmann::json::array();
  for (const auto& step : suite.steps) {
    ++index;
    log::info("[{}/{}] {}: factorybench {}", index, suite.steps.size(), step.name, fmt::join(step.args, " "));
    const auto t0 = std::chrono::steady_clock::now();
    int step_rc = 0;
    std::string error;
    session.collect_into(&report, step.name);
    // Nothing lost if the job ends inside this step (killed, crashed, out of memory, at a time limit): -o
    // (a regular file) holds the steps before it, this one as not finished and the rest as not run, from the
    // moment the step's InterruptReport below is armed (its report so far), and then with what the step
    // measured. A hang the step's watchdog finds (health, locate) is written the same way on rank 0, with its
    // diagnosis; the other ranks hold no results to write. `-o /dev/stdout` gets the one report at the end.
    const bool root = session.is_root();
    auto unfinished = step_result(step);
    unfinished.fail("did not finish: the job ended during this step (killed, crashed or hung)");
    session.set_suite_hang_report(
        [&, root, at = index - 1](const reports::Result& hang) -> std::optional<reports::Report> {
          if (!root) return std::nullopt;
          return report_ending_in(report, step_log, suite, at, hang, session.step_results_so_far());
        });
    const std::size_t results_before = report.results.size();
    // Ctrl-C or a time limit inside this step: the steps before it as they ran, what this one measured so far
    // and its interruption, the rest not run (tools/interrupt_report.hpp). From copies taken now: the step
    // changes `report` as it ends.
    std::optional<InterruptReport> interrupted;
    interrupted.emplace(
        session, step.args.front(),
        [root, at = index - 1, before = report, log = step_log, &suite, &session,
         unfinished](const reports::Result& r) -> std::optional<reports::Report> {
          if (!root) return std::nullopt;
          // The report so far that -o keeps as the step measures (tools/interrupt_report.hpp) ends the step
          // as the one written before it began: "did not finish", now after what it measured.
          const bool so_far = r.params.value("test", std::string()) == "unfinished";
          return report_ending_in(before, log, suite, at, so_far ? unfinished : r,
                                  session.step_results_so_far());
        },
        "the steps before it, and what this one measured, are kept",
        fmt::format("suite step '{}' ({})", step.name, step.args.front()),
        [&session] { session.close_step_console(); });
    try {
      step_rc = parsed[index - 1].action(session);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::runtime) throw;  // may be one rank's alone: main aborts the job
      step_rc = exit_code_for(e.kind());
      error = e.what();
    }
    interrupted.reset();
    session.set_step_so_far({});
    session.collect_into(nullptr, {});
    session.set_suite_hang_report(nullptr);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // The step's verdict is the job's: one that failed on another rank alone (a compare or report input
    // only rank 0's host holds) is recorded on rank 0 as failed, with that rank's reason, which only rank 0
    // prints. A gate is judged on rank 0 (collective --min-busbw fails there alone), so every rank also takes
    // the verdict of all, or --fail-fast stopped rank 0 while the others went on into the next step's
    // collectives, a hang.
    const auto rcs = gather_to_root(mpi, step_rc);
    const auto errors = gather_to_root(mpi, error);
    const bool all_ok = mpi.all_true(step_rc == 0);
    for (std::size_t r = 1; r < rcs.size() && step_rc == 0; ++r) {  // rank 0's own failure first
      if (rcs[r] == 0) continue;
      step_rc = rcs[r];
      error = !errors[r].empty() ? fmt::format("on rank {}: {}", r, errors[r])
                                 : fmt::format("'{}' exited {} on rank {}{}", step.args.front(), step_rc, r,
                                               step_rc == 1 ? ": a check or gate failed" : "");
    }
    const bool ok = step_rc == 0;
    // A step that adds no result of its own (compare, report, an error before measuring) still gets one:
    // its verdict, so that the report, its summary line and JUnit show every step, a failed gate among them.
    if (!error.empty() || report.results.size() == results_before) {
      auto own = step_result(step);
      if (!error.empty())
        own.fail(error);
      else if (!ok)
        own.fail(fmt::format("'{}' exited {}{}", step.args.front(), step_rc,
                             step_rc == 1 ? ": a check or gate failed" : ""));
      report.results.push_back(std::move(own));
    }
    step_log.push_back(
        {{"name", step.name}, {"args", step.args}, {"exit_code", step_rc}, {"seconds", seconds}});
    // "26.1 ms", not "0.0 s": the quick steps of a suite read as not having run at all.
    log::info("[{}/{}] {}: {} ({}){}", index, suite.steps.size(), step.name, ok ? "ok" : "FAILED",
              format_duration(seconds), error.empty() ? "" : ": " + error);
    if (!all_ok) rc = 1;
    if (!all_ok && opt.fail_fast) {
      log::info("--fail-fast: stopping after the failed step");
      // The steps not run are in the report as skipped, so it says why they have no figures.
      for (std::size_t k = index; k < suite.steps.size(); ++k) {
        const auto& rest = suite.steps[k];
        auto skipped = step_result(rest);
        skipped.status = reports::Status::skipped;
        skipped.error = fmt::format("not run: --fail-fast after step '{}' failed", step.name);
        report.results.push_back(std::move(skipped));
        step_log.push_back(
            {{"name", rest.name}, {"args", rest.args}, {"exit_code", nullptr}, {"skipped", true}});
      }
      break;
    }
  }
  report.summary["suite"]["steps"] = step_log;
  // The suite's own verdict, as health and burnin record theirs: CI reads one field, not every exit code.
  report.summary["suite"]["verdict"] = rc == 0 ? "pass" : "fail";
  mpi.barrier();
  const int finish_rc = session.finish(report);
  if (session.is_root() && !session.options().quiet)  // one line per step: its headline figure and verdict
    std::cout << fmt::format("suite {}: {} step{}\n", suite.name, suite.steps.size(),
                             suite.steps.size() == 1 ? "" : "s")
              << reports::render_headlines(reports::headlines(report));
  return rc != 0 ? rc : finish_rc;
}

}  // namespace

Command add_suite_command(CLI::App& app) {
  auto opt = std::make_shared<SuiteOptions>();
  auto* sub = app.add_subcommand(
      "suite",
      "Run several benchmarks in one MPI job and write one combined report.\n"
      "FILE is a JSON suite ({\"steps\": [{\"name\", \"command\", \"args\"}]}) or the name of one in\n"
      "configs/suites (quickstart, node-validation-hopper, node-validation-blackwell).\n"
      "Every step is parsed and its input validated (models, layouts, presets, fault plans, the same\n"
      "train model file on every rank, whether it fits in memory, engines the named backend cannot run,\n"
      "run dirs two steps share) before the first runs; a failing step is recorded and the rest go on.");
  sub->add_option("file", opt->file, "Suite file or preset name")->required();
  sub->add_flag("--fail-fast", opt->fail_fast,
                "Stop at the first failing step (default: record it and go on)");
  sub->add_flag("--list", opt->list, "Print the steps and exit");
  return {sub, [opt](Session& s) { return run_suite(*opt, s); }};
}

}  // namespace fb::tools
