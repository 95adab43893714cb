#include "tools/interrupt_report.hpp"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/logging.hpp"
#include "reports/report_json.hpp"
#include "workloads/run_environment.hpp"

namespace fb::tools {
namespace {

// Writing the report takes milliseconds: a second is ample, and short beside a scheduler's grace (Slurm's
// KillWait is 30 s by default).
constexpr std::chrono::seconds kGraceForRankZero{1};

std::atomic<bool> g_stood_down{false};
constexpr const char* kResultsKept = "the results before it are kept";

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    default:
      return fmt::format("signal {}", sig);
  }
}

reports::Result interrupted_result(const std::string& command, int sig, const std::string& kept) {
  reports::Result r;
  r.benchmark = command;
  r.name = "interrupted";
  r.params = {{"test", "interrupted"}, {"signal", signal_name(sig)}};
  r.fail(fmt::format("interrupted by {} before the run ended{}", signal_name(sig),
                     kept.empty() ? "" : ": " + kept));
  return r;
}

InterruptReport::InterruptReport(Session& session, std::string command,
                                 std::function<reports::Report()> so_far,
                                 std::function<void(const reports::Report&)> print) {
  // Inside a suite the suite's own InterruptReport speaks for the step (the suite's report is not the
  // command's to read while it runs), with what the step measured so far and its console closed.
  if (session.in_suite()) {
    std::function<void()> close;
    if (print && !session.options().quiet) close = [so_far, print] { print(so_far()); };
    session.set_step_so_far(std::move(so_far), std::move(close));
    return;
  }
  auto make = session.hang_report(so_far);
  if (print && !session.options().quiet)
    arm(session, std::move(command), std::move(make), kResultsKept,
        [so_far = std::move(so_far), print = std::move(print)] { print(so_far()); });
  else
    arm(session, std::move(command), std::move(make), kResultsKept, {});
}

InterruptReport::InterruptReport(Session& session, std::string command, Session::HangReport make,
                                 std::string kept, std::string who, std::function<void()> print) {
  arm(session, std::move(command), std::move(make), std::move(kept),
      session.options().quiet ? std::function<void()>() : std::move(print), std::move(who));
}

void InterruptReport::stand_down() {
  g_stood_down.store(true);
}

void InterruptReport::arm(Session& session, std::string command, Session::HangReport make, std::string kept,
                          std::function<void()> print, std::string who) {
  if (who.empty()) who = command;
  const auto& output = session.options().output;
  if (!session.is_root()) {
    // A launcher ends the whole job once one rank dies (mpirun kills the others at once): the other ranks
    // give rank 0 a second to write before the signal ends them, their watchdog files removed first (a rank
    // the launcher kills while it waits leaves none behind).
    if (!output.empty())
      word_ = std::make_unique<LastWordOnSignal>([](int) {
        RemoveOnSignal::remove_now();
        std::this_thread::sleep_for(kGraceForRankZero);
      });
    return;
  }
  word_ = std::make_unique<LastWordOnSignal>([command = std::move(command), print = std::move(print),
                                              make = std::move(make), kept = std::move(kept),
                                              who = std::move(who), output](int sig) {
    if (g_stood_down.load()) return;
    if (print) {
      print();
      std::cout.flush();
    }
    log::error("{}: INTERRUPTED by {}", who, signal_name(sig));
    if (output.empty()) return;
    try {
      if (auto report = make(interrupted_result(command, sig, kept))) {
        report->run["finished_at"] = workloads::utc_timestamp();
        reports::write_report(output, *report);
        log::info("report written to {}", output);
      }
    } catch (const std::exception& e) {
      log::error("{}: the report was not written: {}", command, e.what());
    }
  });
}

}  // namespace fb::tools
