#pragma once
// Ctrl-C, or a scheduler's SIGTERM at a time limit (scancel, Slurm), in the middle of a benchmark used to
// end it with nothing written: minutes of a collective or GEMM sweep lost. While an InterruptReport lives,
// rank 0 then prints the rows measured so far (`print`, without -q), writes -o with the report so far plus
// a failed "interrupted" result, as a hang does (Session::hang_report: inside a suite, the suite's report
// with the step's results so far, the step failed and the rest not run), and says so on stderr; the signal
// then ends the job as before (exit 128 + the signal, core/remove_on_signal.hpp LastWordOnSignal). The
// other ranks hold no results: with -o they wait a second for rank 0 before the signal ends them.
// The signal must reach the ranks: srun passes scancel's and a time limit's SIGTERM to every task, a command
// run alone takes Ctrl-C, and mpirun (Open MPI 4) passes one Ctrl-C or SIGTERM on as SIGTERM a second later;
// a second one makes it abort the job at once (GNU timeout sends two: use timeout --foreground), and its
// SIGKILL a second after its SIGTERM ends a rank still writing. docs/reports.md.
// A job can also end with no chance to write: SIGKILL (the OOM killer; Slurm's teardown of a step in which a
// rank died, without --kill-on-bad-exit), a crash of rank 0. So while it lives, rank 0 also keeps -o (a
// regular file) holding the report so far with a failed "unfinished" result, written when it is armed and
// rewritten when the command says it has a new result (Session::save_so_far): at once, or, where that would
// spend over a twentieth of the run writing, as soon as it is due (tools/report_so_far_writer.hpp); the final
// report, or the signal's or the hang's, replaces it. An Error that ends a command alone removes it again: an
// error writes no report.
#include <functional>
#include <memory>
#include <string>

#include "core/remove_on_signal.hpp"
#include "reports/report.hpp"
#include "tools/report_so_far_writer.hpp"
#include "tools/session.hpp"

namespace fb::tools {

// "SIGINT", "SIGTERM", "SIGHUP", else "signal N".
std::string signal_name(int sig);
// The failed result an interrupted run ends with: benchmark `command`, name "interrupted",
// params {test: "interrupted", signal: "SIGTERM"}, error "interrupted by SIGTERM before the run ended:
// <kept>".
reports::Result interrupted_result(const std::string& command, int sig, const std::string& kept);
// The failed result the report so far ends with until the run ends: benchmark `command`, name "unfinished",
// params {test: "unfinished"}, error "did not finish: the job ended before the run did (killed or crashed)
// : <kept>".
reports::Result unfinished_result(const std::string& command, const std::string& kept);

class InterruptReport {
 public:
  // A command: `so_far` is read on the speaker's thread at the signal, so it must lock what it reads
  // (ReportSoFar). Every rank constructs it; inside a suite it does nothing (the suite's speaks).
  InterruptReport(Session& session, std::string command, std::function<reports::Report()> so_far,
                  std::function<void(const reports::Report&)> print = {});
  // The report to write is `make(the interrupted result)`, in a suite too: a suite's step (the suite's report
  // with the step interrupted), a command that adds to its report so far (health's verdict). `make` runs
  // on the speaker's thread: it must read nothing the run changes unlocked (a copy taken before it).
  // `kept` says what the report keeps ("the steps before it are kept"; empty: nothing); `who` names the run
  // in the line said at the signal (default: the command; a suite: "suite step 'long' (collective)").
  // `print` (rank 0 without -q) runs first: a suite closes what its step printed row by row.
  InterruptReport(Session& session, std::string command, Session::HangReport make, std::string kept,
                  std::string who = {}, std::function<void()> print = {});
  // A hang's report is written (tools/command_hang_watchdog.hpp): the launcher's SIGTERM that ends the job
  // after it must not replace it with an "interrupted" one. From then on a signal writes nothing.
  static void stand_down();
  ~InterruptReport();
  InterruptReport(const InterruptReport&) = delete;
  InterruptReport& operator=(const InterruptReport&) = delete;

 private:
  void arm(Session& session, std::string command, Session::HangReport make, std::string kept,
           std::function<void()> print, std::string who = {});
  std::unique_ptr<LastWordOnSignal> word_;
  Session* saving_ = nullptr;  // the session whose save_so_far this set
  struct Saved;                // what save_so_far wrote (shared with it)
  std::shared_ptr<Saved> saved_;
  std::unique_ptr<ReportSoFarWriter> writer_;  // writes the report so far, now or once due
  bool remove_on_error_ = false;               // a command alone: an Error leaves no report
  int exceptions_ = 0;                         // std::uncaught_exceptions() when armed
};

}  // namespace fb::tools
