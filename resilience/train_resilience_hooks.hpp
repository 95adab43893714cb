#pragma once
// The resilience side of `factorybench train --run-dir DIR`: implements workloads::TrainHooks to log every
// event (resilience/event_log.hpp), write and restore real checkpoints (checkpoint_store.hpp), inject the
// planned faults (fault_plan.hpp) and detect failures: a watchdog thread per rank (hangs), a straggler score
// every `check_every` steps, a majority vote of data-parallel replicas' checksums (SDC) and NaN checks on the
// agreed loss. Fatal detections stop the run (after_step returns false on every rank) or abort the process
// (watchdog), and the supervisor restarts the job from the newest verified checkpoint.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/mpi_context.hpp"
#include "resilience/checkpoint_store.hpp"
#include "resilience/event_log.hpp"
#include "resilience/fault_plan.hpp"
#include "resilience/run_dir_lock.hpp"
#include "workloads/train_hooks.hpp"

namespace fb::resilience {

struct ResilienceOptions {
  std::string run_dir;                // empty: no hooks
  std::int64_t checkpoint_every = 0;  // steps; 0 = none unless checkpoint_interval is set
  std::string checkpoint_interval;    // "" | DURATION | "auto" (Daly from the measured save cost and mtbf)
  double mtbf_s = 0;                  // for auto
  int keep = 2;
  std::uint64_t state_bytes = 0;  // 0 = the model's state; larger pads the shard with seeded bytes
  bool async_checkpoint = false;
  bool resume = false;
  std::string faults;                 // --faults SPEC|FILE
  std::string hang_timeout = "auto";  // DURATION | auto
  double straggler_threshold = 0.8;
  std::int64_t check_every = 5;  // straggler score and SDC vote period (steps)
  std::uint64_t seed = 42;
  std::int64_t last_step = 0;  // the job's final step (--steps; 0 unknown): no drain stop is made at it
  std::string job;             // what the state is (CheckpointStore::set_job); "" checks sizes only
};

// Validates the options (usage Errors naming the option); identical on every rank. The fault plan is
// checked where it is loaded (job_fault_plan, load_fault_plan).
void validate_resilience_options(const ResilienceOptions& options);
// The training job's fault plan (empty without --faults): over its ranks plus the spare slots its supervisor
// holds (FB_SPARES), so a fault planned for a spare applies once a drained rank's replacement runs there.
FaultPlan job_fault_plan(const ResilienceOptions& options, int world_size);

// `--hang-timeout auto`: max(floor, multiple × median step time); before any step completed, `first_step_s`.
struct HangTimeoutPolicy {
  std::optional<double> fixed_s;
  double floor_s = 3, multiple = 10, first_step_s = 120;
  double timeout(double median_step_s, bool any_step_done) const;
};
HangTimeoutPolicy parse_hang_timeout(const std::string& text);

// Straggler scores: median(times) / time per rank (1 = typical, < 1 slower). Pure.
std::vector<double> straggler_scores(const std::vector<double>& times);
// SDC vote: for each rank, true when its checksum differs from the majority of the ranks in its replica
// group (same `group` value). Groups without a strict majority flag nobody. Pure.
// True when some replica group holds more than one checksum: with two replicas (or a tie) nobody can be
// named, but the state is corrupt all the same. Pure.
bool replicas_disagree(const std::vector<std::uint64_t>& checksums, const std::vector<int>& group);
std::vector<bool> sdc_outliers(const std::vector<std::uint64_t>& checksums, const std::vector<int>& group);

// Defined in train_resilience_hooks.cpp (events, steps, fault injection), train_checkpointing.cpp (buffers,
// restore, interval, save and commit) and failure_detection.cpp (watchdog, stragglers, SDC vote, NaN origin).
class TrainResilienceHooks final : public workloads::TrainHooks {
 public:
  // `replica_group`: ranks with the same value hold identical replicated state (the SDC vote groups).
  // `plan`: job_fault_plan's, loaded (and so checked) before the hooks touch the run dir.
  TrainResilienceHooks(ResilienceOptions options, MpiContext& mpi, int replica_group, FaultPlan plan);
  ~TrainResilienceHooks() override;

  std::int64_t on_start(workloads::TrainStateAccess& state) override;
  void before_step(std::int64_t step) override;
  bool after_step(std::int64_t step, const workloads::StepOutcome& outcome) override;
  void on_finish(std::int64_t last_step) override;

  // Last step restored from a checkpoint (0 = none) and whether the run stopped for a rollback.
  std::int64_t restored_step() const { return restored_step_; }
  bool rolled_back() const { return rollback_; }
  std::string stop_reason() const override { return rollback_reason_; }
  // The checkpoint interval in steps once resolved from --checkpoint-interval (0 = not yet / not used).
  std::int64_t interval_steps() const { return interval_steps_; }

 private:
  void log(nlohmann::json event, Durability durability = Durability::flush);
  // on_start's parts, in their order (the collectives in them run on every rank alike).
  void agree_job_start_and_deadline();
  void resume_straggler();
  void allocate_checkpoint_buffers(const workloads::TrainStateAccess& state);
  void restore_newest_checkpoint(workloads::TrainStateAccess& state);
  void log_restore_end(double t0, std::int64_t chosen, std::uint64_t read_bytes, const ResumeChoice& choice);
  void resolve_checkpoint_interval();
  int nan_origin(bool local_finite);
  void heartbeat(std::int64_t entered, std::int64_t completed);
  void inject(const PlannedFault& fault, std::int64_t step);
  bool checkpoint_due(std::int64_t step, double step_s);
  void save_checkpoint(std::int64_t step);
  void poll_async(bool wait);
  void report_write_failure(std::int64_t step, const std::vector<int>& oks, const std::string& error);
  // After a save that did not commit, on every rank: the shards it left go (collective).
  void discard_unsaved(std::int64_t step, bool wrote_mine);
  void commit_gathered(std::int64_t step, const ShardInfo& mine, double write_s_local);
  std::vector<std::int64_t> verified_older_checkpoints(std::int64_t step);
  bool vote_sdc(std::int64_t step);
  void check_stragglers(std::int64_t step);
  // At a step boundary, agreed by every rank (rank 0 decides): 0 go on, 1 the deadline passed, 2 the
  // supervisor asked for a drain.
  int agreed_stop();
  void corrupt_newest_checkpoint(const PlannedFault& fault, std::int64_t step);
  void watchdog_loop();
  int failing_rank_from_heartbeats() const;

  ResilienceOptions o_;
  MpiContext& mpi_;
  int replica_group_;
  int slot_;  // this rank's node slot (placement.json; a drained rank's spare has another slot)
  double slot_since_s_ = 0;  // job time at which the slot entered service (time-triggered faults before it
                             // hit a spare while it was idle: they do not follow it into service)
  std::optional<double> deadline_;  // FB_DEADLINE (supervisor --time-budget): stop at a step boundary
  bool deadline_stop_ = false;
  // FB_DRAIN_WATCH (supervisor --policy drain with a spare): rank 0 looks for RUN_DIR/drain-request at each
  // step boundary; when the supervisor has written it (a straggling slot reached --drain-after), the job
  // saves a checkpoint and stops, so the relaunch on the spare loses no step.
  bool drain_watch_ = false;
  bool drain_stop_ = false;
  int attempt_;
  std::filesystem::path dir_;
  RunDirLock lock_;  // taken before anything in the run dir is touched
  std::unique_ptr<EventLog> log_;
  CheckpointStore store_;
  FaultPlan plan_;
  std::unique_ptr<FiredRecord> fired_;
  HangTimeoutPolicy hang_;
  workloads::TrainStateAccess* state_ = nullptr;
  double job_start_ = 0;
  double step_start_ = 0;
  std::int64_t restored_step_ = 0;
  bool rollback_ = false;
  std::string rollback_reason_;  // the result's failure when rolled back
  // Checkpointing.
  std::vector<std::byte> buffer_;
  std::vector<std::byte> spare_;  // async: the host snapshot buffer (lent to the writer while it writes)
  AsyncShardWriter async_;
  double async_started_ = 0;
  std::int64_t last_save_step_ = 0;
  double last_save_time_ = 0;
  std::int64_t interval_steps_ = 0;  // resolved from a time interval
  std::optional<double> interval_s_;
  double interval_cost_s_ = 0;  // auto: the measured save cost Daly's interval came from
  bool write_fail_pending_ = false;
  std::vector<PlannedFault> corrupt_pending_;
  // Stragglers.
  double straggler_factor_ = 1, straggler_until_ = 0, injected_sleep_ = 0, window_compute_ = 0;
  std::vector<double> own_compute_;
  // Watchdog.
  std::thread watchdog_;
  std::atomic<bool> stop_{false};
  std::atomic<double> last_progress_{0};
  std::atomic<double> median_step_{0};
  std::atomic<bool> any_step_{false};
  // A checkpoint save (or the wait for an async one) in progress since this time (-1: none). It is I/O, not
  // a step, so the watchdog gives it an allowance of its own: max(the step timeout, 60 s, 10 × the longest
  // save so far); a slow, healthy save used to be taken for a hang.
  std::atomic<double> saving_since_{-1};
  std::atomic<bool> restoring_{false};  // the checkpoint work saving_since_ times is the restore
  std::atomic<double> restore_allowance_s_{0};
  std::atomic<double> longest_save_s_{0};
  void saving(bool begin);
  std::vector<double> step_times_;
  // Older checkpoints a prune could not remove, already warned of (every later commit tries again and
  // records it in its event; the warning is said once).
  std::set<std::string> prune_warned_;
  int heartbeat_fd_ = -1;
};

}  // namespace fb::resilience
