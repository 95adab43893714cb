#pragma once
// Cluster-scale goodput simulator: discrete-event Monte Carlo of one training job on N GPUs (nodes of G)
// under a failure model. Events are failures and recovery-phase ends only; checkpoints between two events are
// counted arithmetically, so a trial costs O(failures), not O(time steps). Deterministic for a seed: trial i
// draws from SplitMix64(derive_seed(seed, i)). Memory is O(nodes + spares) for the trial state, reused by
// every trial, plus a bounded sample buffer for percentiles (exact up to kExactSampleCap trials, then P²).
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.hpp"
#include "core/statistics.hpp"
#include "reports/report.hpp"
#include "resilience/failure_model.hpp"

namespace fb::resilience {

// Costs of one failure and one checkpoint, in seconds. R (restart) = detection + relaunch + restore.
struct RecoveryCosts {
  double checkpoint_s = 60;  // blocking save time C (Daly's δ)
  double detection_s = 120;  // failure → detected
  double relaunch_s = 300;   // detected → job running again (scheduler, init)
  double restore_s = 120;    // load the newest checkpoint
  // Asynchronous saves: from the end of the blocking part until the checkpoint is durable (the background
  // write), W. 0: the save is synchronous, durable when it stops blocking. A failure before the commit loses
  // the saved interval too; one save is in flight at a time, so a write longer than the interval blocks the
  // next save until it ends (as `train --async-checkpoint` does).
  double commit_s = 0;
  double restart_s() const { return detection_s + relaunch_s + restore_s; }
};

enum class IntervalPolicy { fixed, young, daly, search };  // search: best simulated goodput ("auto")
std::string_view to_string(IntervalPolicy p);
IntervalPolicy parse_interval_policy(std::string_view text);  // young|daly|auto; throws usage Error

// none: failed nodes are replaced and come back after repair. drain: a node that failed `drain_after` times
// (or straggles) is retired to a spare. Shared by `simulate --policy` and the supervisor.
enum class DrainPolicy { none, drain };
inline constexpr EnumNames<DrainPolicy, 2> kDrainPolicyNames{
    {{DrainPolicy::none, "none"}, {DrainPolicy::drain, "drain"}}};

struct ClusterConfig {
  std::int64_t gpus = 0;
  int gpus_per_node = 8;
  double wall_s = 0;  // the job's wall-time window (--days); with work_s, the cap on a trial's wall time
  double work_s = 0;  // > 0: the job is a fixed amount of work (--work-days, reference-speed compute seconds)
                      // and a trial ends once that much work is kept; its wall time is the time to train
  RecoveryCosts costs;
  std::optional<std::int64_t>
      spares;                     // hot spare nodes; nullopt = unlimited (a replacement is always at hand)
  double repair_s = 48 * 3600.0;  // a node sent to repair comes back to the spare pool after this long
  DrainPolicy drain = DrainPolicy::none;
  int drain_after = 2;     // with drain: a node that failed this many times is retired
  double flaky_share = 0;  // share of nodes that fail flaky_factor× as often (same count: flaky_base_rate)
  double flaky_factor = 1;
  double straggler_share = 0;  // share of nodes that run straggler_factor× slower (the job waits for them)
  double straggler_factor = 1;
  std::int64_t nodes() const { return gpus / gpus_per_node; }
};

// Throws a usage Error naming the option: gpus not a multiple of the node size, zero or negative durations,
// more spares than nodes, shares outside [0, 1), factors below 1, ...
void validate(const ClusterConfig& config);

// Where the wall time went, in seconds; the parts sum to the wall time.
struct TimeSplit {
  double productive = 0;  // work kept, at reference speed
  double checkpoint = 0;  // blocking saves, including ones cut short by a failure
  double redone = 0;      // work lost since the last checkpoint (done again after the restore)
  double detection = 0;
  double relaunch = 0;
  double restore = 0;
  double spare_wait = 0;  // waiting for a spare node when the pool is empty
  double straggler = 0;   // time lost to slow nodes (reference-step definition)
  double total() const {
    return productive + checkpoint + redone + detection + relaunch + restore + spare_wait + straggler;
  }
};
inline constexpr std::array<std::string_view, 8> kTimeSplitNames{
    "productive", "checkpoint", "redone", "detection", "relaunch", "restore", "spare_wait", "straggler"};
std::array<double, 8> as_array(const TimeSplit& s);

// One trial, as plain numbers.
struct TrialOutcome {
  TimeSplit split;
  double wall_s = 0;     // the window, or with a fixed amount of work the time to train (capped)
  bool finished = true;  // fixed work: false when the cap ended the trial first
  std::int64_t failures = 0;
  std::int64_t drained_nodes = 0;
  std::vector<std::int64_t> failures_by_category;  // model order
};

// Streaming summary of one quantity over trials: exact up to kExactSampleCap samples, then P² estimates
// (Jain & Chlamtac, CACM 28(10), 1985) for the percentiles, so memory does not grow with the trial count.
// P² assumes a continuous quantity: on a count (failures per trial: 0, 1, 2) it interpolates between
// the values (a p95 of 1.4 failures). So a quantity of at most kExactSampleCap distinct values (counts, a
// goodput that is 100% in every trial) keeps a histogram and stays exact at any trial count.
inline constexpr std::size_t kExactSampleCap = 4096;
class StreamingSummary {
 public:
  StreamingSummary();
  void add(double x);
  std::size_t count() const { return n_; }
  double mean() const { return n_ ? mean_ : 0; }
  double percentile(double p) const;  // p in [0, 100]; nearest rank while exact
  SampleStats stats() const;          // min, median (p50), max, mean, p99, stddev, n

 private:
  struct P2 {
    double p = 0.5;
    std::array<double, 5> q{}, n{}, np{}, dn{};
    void init(const std::array<double, 5>& sorted, double prob);
    void add(double x);
  };
  // The value at 1-based rank k of the sorted samples, from the histogram.
  double value_at_rank(std::size_t k) const;
  std::size_t n_ = 0;
  double mean_ = 0, m2_ = 0, min_ = 0, max_ = 0;
  std::vector<double> exact_;
  std::map<double, std::size_t> histogram_;  // past the cap: value -> samples, until kExactSampleCap values
  bool histogram_exact_ = true;
  std::array<P2, 4> p2_;  // p5, p50, p95, p99
};

struct SimulationSummary {
  ClusterConfig config;
  double interval_s = 0;
  int trials = 0;
  std::uint64_t seed = 0;
  double model_mtbf_s = 0;       // 1 / total failure rate of the allocation
  double expected_failures = 0;  // rate × wall time
  StreamingSummary goodput_pct;  // reference-step work / wall × 100
  StreamingSummary ettr;         // time not lost to failures (saves and slow steps count) / wall, fraction
  StreamingSummary failures;
  StreamingSummary wall_s;  // per-trial wall time: the window, or the time to train for a fixed work
  int unfinished = 0;       // fixed work: trials the wall-time cap ended before the work was done
  double failures_total = 0;
  double sim_mtbf_s = 0;  // pooled: total wall / total failures (infinite when none)
  TimeSplit mean_split;   // per trial
  // Each part's share of its trial's wall time, 100 × part / wall, averaged over trials: these sum to 100,
  // with the productive share equal to goodput_pct's mean, also when a fixed work makes wall times differ.
  std::array<double, 8> mean_split_pct{};
  double mean_wall_s = 0;
  std::vector<double> mean_failures_by_category;
  double mean_drained_nodes = 0;
};

// Called after every trial with the trials done so far in that call, and within a long trial (every million
// events) with the share of it done added (2.25: two trials and a quarter), for progress displays.
using TrialProgress = std::function<void(double trials_done)>;

// Flaky nodes (a share `share` of the fleet failing `factor`× as often as the rest): the failure rate of a
// non-flaky node, per second, such that a job of such nodes expects the published `rate` per node over
// `horizon_s`. A node that leaves (a share `leave_share` of node failures needs a replacement) is replaced by
// a fresh node of the same fleet, so a job sheds its flaky nodes as it runs: its flaky share falls from
// `share` at the start towards share / (share + (1 - share)·factor). The published counts are what jobs saw
// with failed nodes replaced, so this normalises the count over the job, not the rate at its start; with no
// replacement (or no time) it is rate / (1 - share + share·factor). Per slot a two-state Markov chain, its
// expected count in closed form, solved for the rate by bisection.
double flaky_base_rate(double rate, double share, double factor, double leave_share, double horizon_s);

// Runs `trials` trials at checkpoint interval `interval_s` (compute time between two checkpoints).
SimulationSummary simulate(const FailureModel& model, const ClusterConfig& config, double interval_s,
                           int trials, std::uint64_t seed, const TrialProgress& progress = {});
// One trial (exposed for tests).
TrialOutcome simulate_trial(const FailureModel& model, const ClusterConfig& config, double interval_s,
                            std::uint64_t trial_seed);

// The interval a policy picks and the analytic optima beside it.
struct IntervalChoice {
  IntervalPolicy policy = IntervalPolicy::daly;
  double interval_s = 0;
  double young_s = 0, daly_s = 0;                   // from C and the model's job MTBF
  std::vector<std::pair<double, double>> searched;  // (interval, mean goodput %) when policy = search
};
// fixed: `fixed_s` (must be ≥ C); young/daly: the formula; search: the best mean simulated goodput over a
// geometric grid around Daly's optimum (ratio 1.25 from 0.33× to 3×, refined at ratio 1.1), with the same
// seeds for every candidate (common random numbers) and min(trials, 200) trials each.
IntervalChoice choose_interval(IntervalPolicy policy, std::optional<double> fixed_s,
                               const FailureModel& model, const ClusterConfig& config, int trials,
                               std::uint64_t seed, const TrialProgress& progress = {});
// Trials choose_interval runs before the final simulation: 13 candidates × min(trials, 200) for search.
int interval_search_trials(IntervalPolicy policy, int trials);

// The work of one trial in simulator events, estimated before running: the failures the model expects in
// the trial's wall time (for a fixed work, the work itself at 50% goodput, capped by the window) plus a tenth
// of an event per node for the per-trial state reset. A trial costs O(events), so the CLI multiplies by the
// trials to refuse runs that would take hours and to know when to show progress.
double estimated_trial_events(const FailureModel& model, const ClusterConfig& config);

// Bounds on the inputs beyond which a run is refused up front rather than left to run for hours.
inline constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;  // 16.8 M GPUs
inline constexpr double kMaxDays = 36500;                        // 100 years of wall time or work
inline constexpr int kMaxTrials = 10'000'000;
inline constexpr double kMaxEvents = 4e9;  // all cases together: 5 to 10 minutes on one core here

// Recovery costs measured by `factorybench resilience` (issue 6 contract), from the result's extra.ledger
// (reports::find_ledger_recovery_totals): checkpoint = checkpoints.save_blocking_s / saves; per failure,
// detection = badput_s.detection / failures, relaunch = badput_s.relaunch / restarts + badput_s.init /
// attempts (the re-attempt's start-up), restore = badput_s.ckpt_restore / restarts. A cost is left to the
// options or defaults when a field it needs is absent (`missing`) or the run could not measure it
// (`unmeasured`: no save, no failure, no restart, or a total of zero).
struct Calibration {
  std::optional<double> checkpoint_s, restore_s, detection_s, relaunch_s;
  // The asynchronous write until durable: checkpoints.async_commit_s / async_commits; 0 when the run's saves
  // were all synchronous (commit_sync); unset for a report of an earlier version or a run without saves.
  std::optional<double> commit_s;
  bool commit_sync = false;
  std::vector<std::string> missing;               // absent fields: "badput_s.detection", "restarts", ...
  std::map<std::string, std::string> unmeasured;  // cost -> why: "detection" -> "the run had no failure"
  // What the per-restart costs are divided by: "restarts", or "failures" for a report that has no restart
  // count (an older version).
  std::string restarts_from = "restarts";
  bool relaunch_has_init = false;  // relaunch_s includes badput_s.init / attempts
  std::string source;              // "FILE: result resilience/NAME"
  // The failures detection_s is the mean over, by kind ("sdc" -> 1); empty where the report does not say.
  std::map<std::string, double> detection_from;
  // Every one of them was found by the step's own checks (sdc: the replicas' checksum vote, nan: the finite
  // check), in the step that went wrong: detection_s is then about 0, not what a crash (the launcher sees a
  // rank die) or a hang (a watchdog's timeout) costs, and the failure models' interruptions are mostly those.
  bool detection_in_step_only = false;
};
Calibration calibrate_from_report(const reports::Report& report, const std::string& source);

}  // namespace fb::resilience
