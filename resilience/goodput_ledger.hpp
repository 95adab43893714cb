#pragma once
// Goodput accounting as a pure function of the event log (resilience/event_log.hpp). Every second of the
// job's wall time lands in exactly one category, so the parts sum to the wall time:
//
//   wall = productive + slowdown + init + ckpt_save + ckpt_restore + wasted + detection + relaunch + other
//
//   productive   kept step time at the reference step time (steps that are part of the final result)
//   slowdown     kept step time beyond n_kept × reference step (reference-step definition; stragglers)
//   init         attempt start → init_done (process launch, MPI, model build), and pre-flight health checks
//                (preflight.t_start → preflight) before a launch
//   ckpt_save    blocking part of checkpoint saves (snapshot for async saves)
//   ckpt_restore restore start → end (finding a verified checkpoint, reading and loading it)
//   wasted       steps re-done after a rollback, plus the partial step at a failure
//   detection    failure instant → failure detected (watchdog timeout, exit noticed, vote)
//   relaunch     failure detected → next attempt start (teardown, scheduling, relaunch)
//   other        the rest (hook overhead between steps, the tail after the last step)
//
// Definitions (docs/metrics.md, shared/REFERENCES.md): goodput (productive-time, "step_time") = kept step
// time / wall = (productive + slowdown) / wall; goodput (reference-step) = productive / wall; ETTR = 1 −
// failure-caused loss / wall, where the loss is restore + wasted + detection + relaunch + init of
// re-attempts and failed launches, and ETTR = 0 for a job that kept no step; MTTF = uptime / failures;
// MTTR = mean of failure instant → training resumed.
// A failed launch (failure_detected kind "launch": no rank got through its start-up) is not a failure of
// the job: it is counted apart (launch_failures), its time is init, and it is in neither MTTF nor MTTR.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/resilience_extra.hpp"

namespace fb::resilience {

inline constexpr std::string_view kLaunchFailure = "launch";

// crash, hang, sdc, nan: faults that end an attempt (the others slow it or damage a checkpoint).
bool is_fatal_fault_kind(std::string_view kind);

// The ledger's wall-time parts in print order (productive first), as Badput::items() names them.
inline constexpr std::array<std::string_view, 9> kWallTimeParts{"productive", "slowdown",     "init",
                                                                "ckpt_save",  "ckpt_restore", "wasted",
                                                                "detection",  "relaunch",     "other"};

struct Badput {
  double productive_s = 0, slowdown_s = 0, init_s = 0, ckpt_save_s = 0, ckpt_restore_s = 0, wasted_s = 0,
         detection_s = 0, relaunch_s = 0, other_s = 0;
  double total() const;
  // category name → seconds, in the order above (productive first); names as used in reports.
  std::vector<std::pair<std::string, double>> items() const;
};

struct FailureRecord {
  int attempt = 0;
  std::string kind;  // crash, hang, sdc, nan, ...
  int rank = -1;     // -1 when unknown
  std::string how;   // how it was detected
  double failed_at = 0, detected_at = 0;
  std::optional<double> resumed_at;  // when the next attempt was training again
};

struct CheckpointSkip {
  std::string checkpoint, reason;
};

struct Ledger {
  double wall_s = 0;
  Badput parts;
  double productive_time_s = 0;      // kept step time (productive-time definition; slow steps count)
  double reference_step_s = 0;       // from job_start.reference_step_s, else the median kept step time
  std::int64_t steps_completed = 0;  // highest step of the final result
  std::int64_t kept_steps = 0, wasted_steps = 0;
  int attempts = 0, failures = 0, restarts = 0;
  double goodput = 0, goodput_ref = 0, ettr = 0;  // fractions of wall time
  double uptime_s = 0, mttf_s = 0, mttr_s = 0;
  bool mttf_censored = false;  // no failure: mttf_s is the uptime, a lower bound
  std::map<std::string, int> failures_by_kind, restarts_by_kind, nonfatal_by_kind;
  std::map<std::string, std::vector<double>> detection_latency_s_by_kind;
  std::vector<FailureRecord> failure_list;
  int launch_failures = 0;  // attempts in which no rank started (not in failures, MTTF or MTTR)
  std::vector<FailureRecord> launch_failure_list;  // rank -1; failed_at = the attempt's start
  int stragglers = 0, drains = 0, faults_injected = 0;
  // Pre-flight health checks (resilience --preflight); their time is part of init.
  int preflights = 0, preflight_failures = 0;
  double preflight_s = 0;
  // Checkpoints.
  int ckpt_saves = 0, ckpt_save_failures = 0, ckpt_commits = 0, ckpt_restores = 0;
  double ckpt_save_blocking_s = 0, ckpt_write_s = 0, ckpt_restore_s = 0;
  // Asynchronous saves committed, and their time from the end of the blocking snapshot to the commit (the
  // background write and the step that found it done), summed: the window in which a failure loses the save.
  int ckpt_async_commits = 0;
  double ckpt_async_commit_s = 0;
  std::uint64_t ckpt_write_bytes = 0, ckpt_restore_bytes = 0;
  double ckpt_write_gbps = 0, ckpt_restore_gbps = 0;  // GB/s (10^9 bytes), all ranks together
  // The interval chosen from --checkpoint-interval (the last ckpt_interval event): "" when none.
  std::string ckpt_interval_policy;  // fixed | daly
  double ckpt_interval_s = 0;
  std::int64_t ckpt_interval_steps = 0;
  std::vector<std::int64_t> restored_steps;  // per restore, the step restored (0 = from scratch)
  std::vector<CheckpointSkip> ckpt_skipped;
  std::size_t torn_lines = 0;
};

// Accounts a log (events in file order). Throws an input Error naming the event index when a required field
// is missing or of the wrong type.
Ledger compute_ledger(std::span<const nlohmann::json> events);

// The ledger as the report carries it (extra.ledger, reports/resilience_extra.hpp), and as JSON.
reports::LedgerRecord ledger_record(const Ledger& ledger);
nlohmann::json ledger_to_json(const Ledger& ledger);

}  // namespace fb::resilience
