#pragma once
// What a stopped `resilience` run leaves in its report: Ctrl-C or a scheduler's SIGTERM to the supervisor, or
// a SIGKILL (tools/interrupt_report.hpp), used to lose the whole campaign, failures and recoveries already
// measured included. The report so far is the report as begun, the jobs of the policies done (--policy
// compare runs two), and the running job's figures from its event log (resilience::job_so_far): goodput,
// badput, MTTF and the events up to the moment it is read. Read on any thread; locked.
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "reports/report.hpp"
#include "resilience/event_log_follower.hpp"
#include "resilience/resilience_result.hpp"
#include "resilience/supervisor.hpp"

namespace fb::tools {

class ResilienceSoFar {
 public:
  // `compare`: two policies' jobs, whose events carry the policy's name.
  ResilienceSoFar(reports::Report begun, bool compare) : report_(std::move(begun)), compare_(compare) {}
  // The job of `policy` runs in `run_dir` from now (its event log fresh).
  void running(std::string policy, std::filesystem::path run_dir, resilience::ResilienceRunParams params);
  // A job ended: the report with its result and events, and every job's supervisor result so far.
  void finished(const reports::Report& report, std::vector<resilience::SupervisorResult> runs);
  reports::Report report() const;
  static std::function<reports::Report()> reader(std::shared_ptr<const ResilienceSoFar> self) {
    return [self = std::move(self)] { return self->report(); };
  }

 private:
  mutable std::mutex mutex_;
  reports::Report report_;
  bool compare_ = false;
  std::vector<resilience::SupervisorResult> runs_;
  std::string policy_;  // the running job's; empty: none runs
  std::filesystem::path run_dir_;
  resilience::ResilienceRunParams params_;
  // The running job's event log, read by what each save adds (its first read: the whole log).
  mutable std::optional<resilience::EventLogFollower> log_;
};

// The supervisor is one process with no backend: the report's run and system facts (ranks, backend, hosts,
// each rank's device, the peak MFU is taken against) are its job's, from the newest attempt report the job
// wrote in `run_dir`. None written (every attempt died before its end): the supervisor's stay.
void adopt_job_run(reports::Report& report, const std::filesystem::path& run_dir);

}  // namespace fb::tools
