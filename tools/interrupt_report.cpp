#include "tools/interrupt_report.hpp"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
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
// The reports so far, the signal's and the hang's are written one at a time, and none so far after the
// signal's or the hang's (which would replace it).
std::mutex g_write_mutex;
bool g_ended = false;  // the signal's report is written (or being written)

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

reports::Result unfinished_result(const std::string& command, const std::string& kept) {
  reports::Result r;
  r.benchmark = command;
  r.name = "unfinished";
  r.params = {{"test", "unfinished"}};
  r.fail(fmt::format("did not finish: the job ended before the run did (killed or crashed){}",
                     kept.empty() ? "" : ": " + kept));
  return r;
}

struct InterruptReport::Saved {
  std::filesystem::path path;  // -o once a report so far was written there
  bool warned = false;         // a write failed, and was said (once: it would fail after every result)
};

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
  if (print && !session.options().quiet) {
    // At the signal the console and the report show the same run: what is printed is what is written, not
    // a second read (a resilience job's event log grows in between). The signal's print comes before any
    // further save (arm: g_ended), so the saves so far read afresh.
    auto at_signal = std::make_shared<std::optional<reports::Report>>();
    auto make = session.hang_report([at_signal, so_far] { return *at_signal ? **at_signal : so_far(); });
    arm(session, std::move(command), std::move(make), kResultsKept,
        [at_signal, so_far = std::move(so_far), print = std::move(print)] {
          *at_signal = so_far();
          print(**at_signal);
        });
  } else {
    arm(session, std::move(command), session.hang_report(so_far), kResultsKept, {});
  }
}

InterruptReport::InterruptReport(Session& session, std::string command, Session::HangReport make,
                                 std::string kept, std::string who, std::function<void()> print) {
  arm(session, std::move(command), std::move(make), std::move(kept),
      session.options().quiet ? std::function<void()>() : std::move(print), std::move(who));
}

void InterruptReport::stand_down() {
  std::lock_guard lock(g_write_mutex);  // a report so far being written lands before the hang's
  g_stood_down.store(true);
}

InterruptReport::~InterruptReport() {
  if (!saving_) return;
  saving_->set_save_so_far({});
  writer_.reset();  // a write in progress lands first; a pending one is dropped (the final report is next)
  // Unwound by an Error: a command alone writes no report for one (the error line says why), so the report
  // so far goes too. A suite keeps its own: the steps before this one are in it.
  if (remove_on_error_ && std::uncaught_exceptions() > exceptions_) {
    std::lock_guard lock(g_write_mutex);
    if (!saved_->path.empty() && !g_ended && !g_stood_down.load()) {
      std::error_code ec;
      std::filesystem::remove(saved_->path, ec);
    }
  }
}

void InterruptReport::arm(Session& session, std::string command, Session::HangReport make, std::string kept,
                          std::function<void()> print, std::string who) {
  const bool alone = who.empty();  // a command alone (a suite names its step)
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
  // The report so far, kept in -o as the run goes (a regular file only: `-o /dev/stdout` would print a
  // report per save).
  if (!output.empty() && !write_target(output).in_place) {
    saving_ = &session;
    saved_ = std::make_shared<Saved>();
    remove_on_error_ = alone;
    exceptions_ = std::uncaught_exceptions();
    // Written on this thread or the writer's: `make` reads the run under its own locks, as at a signal.
    writer_ = std::make_unique<ReportSoFarWriter>([saved = saved_, make, command, kept, output] {
      std::lock_guard lock(g_write_mutex);
      if (g_ended || g_stood_down.load()) return;
      try {
        if (auto report = make(unfinished_result(command, kept))) {
          report->run["finished_at"] = workloads::utc_timestamp();
          reports::write_report(output, std::move(*report));
          saved->path = output;
        }
      } catch (const std::exception& e) {  // the run goes on; its final report is what matters
        if (!std::exchange(saved->warned, true))
          log::warn("{}: the report so far was not written (the run goes on): {}", command, e.what());
      }
    });
    session.set_save_so_far([writer = writer_.get()] { writer->request(); });
    // At once too: a job killed before its first result (a long first size, a training warm-up) leaves the
    // run's facts (hosts, devices, command) and why it has no figure, not nothing.
    session.save_so_far();
  }
  word_ = std::make_unique<LastWordOnSignal>([command = std::move(command), print = std::move(print),
                                              make = std::move(make), kept = std::move(kept),
                                              who = std::move(who), output](int sig) {
    {
      std::lock_guard lock(g_write_mutex);  // a report so far being written lands first, and none after
      if (g_stood_down.load()) return;
      g_ended = true;
    }
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
