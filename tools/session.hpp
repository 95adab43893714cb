#pragma once
// What every subcommand gets: the global options, MPI and the backend (created on first use, so commands
// that need neither start instantly), and the one place a report is finished and written.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "core/rank_collectives.hpp"
#include "core/telemetry_sampler.hpp"
#include "reports/report.hpp"
#include "workloads/device_peak.hpp"

namespace fb::tools {

struct GlobalOptions {
  std::string backend = "auto";
  std::string output;  // JSON report path; empty = none
  std::uint64_t seed = 42;
  bool quiet = false;
  std::string log_level = "info";
  std::string telemetry = "summary";              // off | summary | full (docs/health.md)
  std::optional<std::string> telemetry_interval;  // sampling period; default 100ms
};

class Session {
 public:
  Session(int* argc, char*** argv, GlobalOptions options, std::vector<std::string> args);
  ~Session();

  const GlobalOptions& options() const { return options_; }
  const std::vector<std::string>& args() const { return args_; }
  std::string command_line() const;

  // Initialises MPI on first use and checks that every rank got the same arguments.
  MpiContext& mpi();
  bool mpi_started() const { return mpi_ != nullptr; }  // mpi() was called (a suite starts it for its steps)
  Backend& backend();
  const workloads::DevicePeak& peak();
  bool is_root();  // rank 0 (or the launcher's rank 0 before MPI is up)
  // The telemetry sampler, started with the backend; nullptr before that or under --telemetry off.
  // Workloads mark their own windows with it (workloads/telemetry_report.hpp).
  TelemetrySampler* telemetry() { return telemetry_.get(); }

  // A report with tool/run/system filled (collective when MPI is up).
  reports::Report begin_report(bool with_device = true);
  // Stamps finished_at, writes --output atomically on rank 0. Returns 1 when a result failed, else 0.
  // In suite mode the results, events and summary go into the suite's report instead.
  int finish(reports::Report& report);
  // On rank 0, an error line per failed result (the first five, then a count): why exit 1, where no table
  // says it (--quiet; a command that prints no table, import).
  void say_failed_results(const reports::Report& report);

  // Suite mode: finish() merges each step's report into `sink` under `step` (nullptr ends it).
  void collect_into(reports::Report* sink, std::string step);

  // What a command's hang watchdog writes to -o when the job hangs (tools/command_hang_watchdog.hpp), and
  // what an interrupted command writes (tools/interrupt_report.hpp): the report to write given the failed
  // result that ends the job ("hang", "interrupted"), or nothing to write. Alone: the command's own report so
  // far (`partial`) with the hang. Inside a suite: the suite's report so far with the hang as the step's
  // result (set_suite_hang_report), so that the steps before it are not lost, and the step's results so far
  // (set_step_so_far).
  using HangReport = std::function<std::optional<reports::Report>(const reports::Result& hang)>;
  HangReport hang_report(reports::Report partial) const;
  // The same for a command that adds results as it goes (locate: its p2p matrix before the bisection):
  // alone, `so_far()` is called at the hang (from the watchdog's thread: it must lock what it reads), so
  // the report keeps what was measured before the hung call.
  HangReport hang_report(std::function<reports::Report()> so_far) const;
  void set_suite_hang_report(HangReport make) { suite_hang_report_ = std::move(make); }
  // Inside a suite, what the running step has measured so far, so that a hang or a signal in the step keeps
  // it in the suite's report (a command alone keeps it in its own): registered by the step's command
  // (InterruptReport, hang_report(so_far)), read on the watchdog's or the signal's thread (`so_far` must lock
  // what it reads), cleared by the suite after the step. `close_console` ends what the step printed row by
  // row (rank 0 without -q; may be empty).
  void set_step_so_far(std::function<reports::Report()> so_far, std::function<void()> close_console = {});
  // The step's results so far, each marked with the step (empty when none was registered).
  std::vector<reports::Result> step_results_so_far() const;
  void close_step_console() const;
  // Rank 0 with -o, while a run's InterruptReport lives (a command alone, or the suite's for its step): -o
  // rewritten with the report so far and a failed "unfinished" result (tools/interrupt_report.hpp), at most
  // once a second. Commands call it after each result they add; a no-op elsewhere.
  void save_so_far() const {
    if (save_so_far_) save_so_far_();
  }
  void set_save_so_far(std::function<void()> save) { save_so_far_ = std::move(save); }
  // Where a command writes a rendering of its own (report, compare): -o/--output, but inside a suite, whose
  // -o is the suite's JSON report, nothing (the rendering goes to stdout).
  std::string rendering_output() const { return sink_ ? std::string() : options_.output; }

  // Suite preflight: a command that declares it (Command::preflight) returns 0 as soon as its input is
  // validated (options, the models, layouts and files they name) while this is set, before it measures,
  // launches or writes anything; its Errors are what the run would throw.
  // While it is set, only errors are logged: a warning the check finds is said again when the step runs.
  bool checking_only() const { return checking_only_; }
  // A suite step: its preflight check, or its run (collect_into).
  bool in_suite() const { return checking_only_ || sink_ != nullptr; }
  void set_checking_only(bool on);
  // Work every rank does on its own once MPI is up that may fail on some ranks only (reading this host's
  // files), its outcome agreed so that every rank stops when one does (core/rank_collectives.hpp). In a
  // suite's preflight it only runs: the suite agrees once for all its checks (no collective inside them:
  // check_together).
  template <class F>
  auto on_every_rank(F&& work) {
    if (checking_only_) return work();
    return agreed(mpi(), std::forward<F>(work));
  }
  // A suite preflight's check that needs every rank (a collective: the smallest free memory, the same model
  // file everywhere): queued, and run by the suite once every rank's own checks passed, since a rank that one
  // of those stopped would never reach it and the others would wait in it for ever.
  void check_together(std::function<void()> check) { together_.push_back(std::move(check)); }
  std::vector<std::function<void()>> take_checks_together() { return std::exchange(together_, {}); }

  // The subcommand this session runs ("collective"): the benchmark of the start-up report's result.
  void set_command_name(std::string name) { command_name_ = std::move(name); }
  // The start-up report (rank 0, -o a regular file, written as the backend starts): removed while it is still
  // what -o holds, i.e. no report was written since. An Error says why there is no report, and a command that
  // ended without one leaves none; the destructor calls it too, main before it aborts the job.
  void discard_startup_report();

  // -o/--output names a file rank 0 can create (usage error otherwise), and none of `inputs` (the files
  // report, compare and import read) nor a file named by another argument (a suite, a model, a failure
  // model): writing one would destroy it. Checked with MPI's start; the
  // commands that start no MPI (report, compare, import, resilience) call it before their work.
  void check_output_writable(const std::vector<std::string>& inputs = {}) const;
  // Files the run reads that its arguments do not name (a suite's steps'): -o must not name one of them,
  // which the start-up report written before MPI's start checks too.
  void add_output_inputs(const std::vector<std::string>& files) {
    output_inputs_.insert(output_inputs_.end(), files.begin(), files.end());
  }

 private:
  int* argc_;
  char*** argv_;
  GlobalOptions options_;
  std::vector<std::string> args_;
  // When the command began, before MPI, the device, the telemetry sampler or the peak measurement: the
  // report's run.started_at, "before the first measurement" (docs/reports.md).
  std::string started_at_;
  std::unique_ptr<MpiContext> mpi_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<workloads::DevicePeak> peak_;
  TelemetryOptions telemetry_options_;
  std::unique_ptr<TelemetrySampler> telemetry_;
  double telemetry_from_s_ = 0;  // start of the window the next finish() summarises
  reports::Report* sink_ = nullptr;
  std::string sink_step_;
  HangReport suite_hang_report_;
  mutable std::mutex step_mutex_;  // set by the main thread, read by a watchdog's or a signal's
  std::function<reports::Report()> step_so_far_;
  std::function<void()> step_console_;
  bool checking_only_ = false;
  std::vector<std::function<void()>> together_;
  std::function<void()> save_so_far_;
  std::string command_name_ = "factorybench";
  std::vector<std::string> output_inputs_;
  // Rank 0 before MPI's start (by the launcher's word) and again as the backend starts: -o holds a report of
  // the run's facts and a failed "unfinished" result until the command's first write replaces it, so a job
  // killed in its start-up (MPI, waiting for every rank; the device, NCCL, the peak probe: seconds, and for
  // ever where a rank never joins or NCCL's set-up hangs) says so, where an earlier run's report was left to
  // be read as this one's. Known by its bytes (its run facts and start time make them this run's).
  void write_startup_report();
  struct StartupReport {
    std::filesystem::path path;
    std::string text;
  };
  std::optional<StartupReport> startup_report_;
};

using CommandAction = std::function<int(Session&)>;

// Appends a suite step's results to the suite's report, each marked with the step; when any would repeat an
// earlier result's identity (benchmark + name), all of them are named "<step>/<name>": one step's sweep under
// one naming (renaming only the clashing sizes split it across two chart series, and a glob rule gated part
// of it).
void append_step_results(reports::Report& suite, std::vector<reports::Result> results,
                         const std::string& step);

}  // namespace fb::tools
