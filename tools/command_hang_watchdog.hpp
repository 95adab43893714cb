#pragma once
// The hang watchdog of a command that communicates (locate, health): per-rank call states in
// <run-dir>/fb-hang-<run id>/ (core/hang_watchdog.hpp). On a hang one rank prints the diagnosis ("hang: rank
// 5 (host X, GPU 1) never entered allreduce #3 (4 MiB)", then "<command>: FAIL (hang; rank states in DIR)")
// and writes the report so far plus a failed "hang" result; then the job ends with exit 1 instead of waiting
// for the scheduler's time limit.
#include <filesystem>
#include <memory>
#include <string>

#include "core/hang_watchdog.hpp"
#include "core/mpi_context.hpp"
#include "reports/report.hpp"

namespace fb::tools {

class CommandHangWatchdog {
 public:
  // timeout_s <= 0: off. `partial` is what the report holds if the job hangs; `output` the report path (may
  // be empty). Every rank constructs it.
  CommandHangWatchdog(const MpiContext& mpi, std::string command, reports::Report partial, std::string output,
                      const std::filesystem::path& run_dir, double timeout_s);
  // No hang: stops the watchdog and removes the state files. Collective.
  void finish();
  const std::filesystem::path& dir() const { return dir_; }

 private:
  const MpiContext& mpi_;
  std::filesystem::path dir_;
  std::unique_ptr<HangWatchdog> watchdog_;
};

}  // namespace fb::tools
