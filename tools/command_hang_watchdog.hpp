#pragma once
// The hang watchdog of a command that communicates (locate, health, collective): per-rank call states in
// <run-dir>/fb-hang-<run id>/ (core/hang_watchdog.hpp). On a hang one rank prints the diagnosis ("hang: rank
// 5 (host X, GPU 1) never entered allreduce #3 (4 MiB)", then "<command>: FAIL (hang; rank states in DIR)"),
// and rank 0 writes the report so far plus a failed "hang" result (the rank that printed, only when rank 0
// cannot); then the job ends with exit 1 instead of waiting for the scheduler's time limit.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/hang_watchdog.hpp"
#include "core/mpi_context.hpp"
#include "reports/report.hpp"
#include "tools/session.hpp"

namespace fb::tools {

// --hang-timeout of locate, health and collective: 0 (off) or at least a second; a shorter limit takes an
// ordinary collective for a hang (and the watchdog polls every 50 ms at best).
double parse_command_hang_timeout(const std::string& text);
// The same, for a command that also takes --run-dir for the watchdog's state files alone (health,
// collective): a --run-dir given with --hang-timeout 0 does nothing, and is refused.
double parse_command_hang_timeout(const std::string& text, bool run_dir_given);
// With the watchdog on (`timeout_s` > 0): a usage Error when --run-dir cannot hold its state files (a part of
// the path is a file, or the directory, or the nearest one above it that exists, cannot be written). Makes
// nothing: called before the command measures or launches anything (and by a suite's preflight), so that
// such a run dir is not found only as the watchdog starts. Every rank checks its own host's view, agreed
// (Session::on_every_rank).
void check_hang_run_dir(Session& session, const std::string& run_dir, double timeout_s);
// Adds --hang-timeout and --run-dir (the watchdog's state files, removed after a run without hang) to `sub`;
// `ends` is what a hang ends ("the check", "the run").
void add_hang_watchdog_options(CLI::App& sub, std::string& hang_timeout, std::string& run_dir,
                               std::string_view ends);

class CommandHangWatchdog {
 public:
  // timeout_s <= 0: off. `report_on_hang` makes what -o holds if the job hangs (Session::hang_report: the
  // command's report so far, or inside a suite the suite's), `output` the report path (may be empty). Every
  // rank constructs it.
  // `finish_console` (may be empty) runs on rank 0 at a hang, before the diagnosis is printed, when rank 0
  // prints it or writes the report: a table printed row by row gets its last row and its footer.
  CommandHangWatchdog(const MpiContext& mpi, std::string command, const std::string& run_id,
                      Session::HangReport report_on_hang, std::string output,
                      const std::filesystem::path& run_dir, double timeout_s,
                      std::function<void()> finish_console = {});
  // No hang: stops the watchdog and removes the state files. Collective.
  void finish();
  // Without finish() (the command stopped on an error: refused input found at run time, a failed check
  // that throws): stops the watchdog and removes this rank's state file, then the directory (and a
  // --run-dir this run made) once empty, so that the last rank out leaves nothing behind. Not collective.
  ~CommandHangWatchdog();
  CommandHangWatchdog(const CommandHangWatchdog&) = delete;
  CommandHangWatchdog& operator=(const CommandHangWatchdog&) = delete;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  const MpiContext& mpi_;
  std::filesystem::path dir_;
  // The parts of --run-dir that did not exist, deepest first (a/b: a/b, then a): removed again once empty.
  std::vector<std::filesystem::path> made_;
  void remove_made() const;
  std::unique_ptr<HangWatchdog> watchdog_;
};

}  // namespace fb::tools
