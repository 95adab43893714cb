#pragma once
// The extra of a "resilience" Result (resilience/resilience_result.cpp writes it; reports/
// resilience_console.cpp and simulate --calibrate read it): the goodput ledger as the report carries it
// (extra.ledger; resilience/goodput_ledger.hpp computes it and defines every figure), why the job stopped,
// and, when a rank was drained, the drains and the MTTF split at the first drain.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

struct LedgerFailure {
  int attempt = 0;
  std::string kind;
  int rank = -1;  // -1 when unknown
  std::string how;
  double failed_at = 0, detected_at = 0;
  std::optional<double> resumed_at;  // null in the JSON when the job never trained again
  bool operator==(const LedgerFailure&) const = default;
};

struct LedgerDetectionLatency {
  double mean_s = 0, max_s = 0;
  std::size_t n = 0;
  bool operator==(const LedgerDetectionLatency&) const = default;
};

struct LedgerCheckpointSkip {
  std::string checkpoint, reason;
  bool operator==(const LedgerCheckpointSkip&) const = default;
};

struct LedgerCheckpoints {
  int saves = 0, save_failures = 0, commits = 0, restores = 0;
  double save_blocking_s = 0, write_s = 0;
  int async_commits = 0;      // asynchronous saves committed
  double async_commit_s = 0;  // their snapshot end → commit, summed (0 in a report of an earlier version)
  std::uint64_t write_bytes = 0;
  double write_gbps = 0, restore_s = 0;
  std::uint64_t restore_bytes = 0;
  double restore_gbps = 0;
  std::vector<std::int64_t> restored_steps;
  std::string interval_policy;  // "" when no interval was chosen
  double interval_s = 0;
  std::int64_t interval_steps = 0;
  std::vector<LedgerCheckpointSkip> skipped;
  bool operator==(const LedgerCheckpoints&) const = default;
};

struct LedgerPreflight {
  int checks = 0, failed = 0;
  double seconds = 0;
  bool operator==(const LedgerPreflight&) const = default;
};

// extra.ledger. split_s holds every wall-time part by name, productive included; the JSON's badput_s (the
// parts but productive) and goodput_definitions (both goodputs with the productive seconds each divides by)
// are written from it and the goodputs, not stored twice.
struct LedgerRecord {
  double wall_s = 0;
  std::map<std::string, double> split_s;
  double productive_time_s = 0, reference_step_s = 0;
  double goodput = 0, goodput_ref = 0, ettr = 0;
  double uptime_s = 0, mttf_s = 0;
  bool mttf_censored = false;
  double mttr_s = 0;
  int attempts = 0, failures = 0, restarts = 0;
  std::map<std::string, int> failures_by_kind, restarts_by_kind, nonfatal_by_kind;
  std::map<std::string, LedgerDetectionLatency> detection_latency_by_kind;
  std::vector<LedgerFailure> failure_list;
  int launch_failures = 0;
  std::vector<LedgerFailure> launch_failure_list;
  std::int64_t steps_completed = 0, kept_steps = 0, wasted_steps = 0;
  int stragglers = 0, drains = 0, faults_injected = 0;
  LedgerPreflight preflight;
  LedgerCheckpoints checkpoints;
  std::size_t torn_lines = 0;
  bool operator==(const LedgerRecord&) const = default;
};

// One drain: the figures the console prints, and the rest of the supervisor's drain event as logged (type,
// t, cause, strikes, host: docs/resilience.md), kept as it is.
struct ResilienceDrain {
  int rank = 0, from_slot = 0, to_slot = 0;
  std::string reason;
  nlohmann::json event = nlohmann::json::object();
  bool operator==(const ResilienceDrain&) const = default;
};

// Present when the run drained a rank (written only then).
struct DrainSplit {
  std::vector<ResilienceDrain> drains;
  double mttf_before_drain_s = 0, mttf_after_drain_s = 0;
  int failures_before_drain = 0, failures_after_drain = 0;
  bool operator==(const DrainSplit&) const = default;
};

struct ResilienceExtra {
  LedgerRecord ledger;
  std::string stop_reason;
  std::optional<DrainSplit> drain;
  bool operator==(const ResilienceExtra&) const = default;
};

// The ledger's JSON (extra.ledger, and resilience::ledger_to_json).
nlohmann::json ledger_json(const LedgerRecord& ledger);
// A drain event (resilience/event_log.hpp) as a ResilienceDrain; throws an input Error when a printed
// field is missing.
ResilienceDrain drain_from_event(const nlohmann::json& event);

void write_resilience_extra(Result& r, const ResilienceExtra& extra);
// Throws an input Error naming the result and the missing or mistyped key.
ResilienceExtra read_resilience_extra(const Result& r);

// The totals --calibrate derives recovery costs from, each only when present: reports of older versions, or
// written by hand, lack some. nullopt without extra.ledger; throws an input Error naming the field when one
// that is present is not a number (or the ledger, its checkpoints or badput_s not an object).
struct LedgerRecoveryTotals {
  std::optional<double> attempts, failures, restarts, checkpoint_saves, checkpoint_save_blocking_s;
  std::optional<double> checkpoint_async_commits, checkpoint_async_commit_s;  // nullopt: an earlier version
  std::optional<std::map<std::string, double>> badput_s;  // nullopt: the ledger has no badput_s
  std::map<std::string, double> failures_by_kind;         // empty: none, or an older report
  bool operator==(const LedgerRecoveryTotals&) const = default;
};
std::optional<LedgerRecoveryTotals> find_ledger_recovery_totals(const Result& r);

}  // namespace fb::reports
