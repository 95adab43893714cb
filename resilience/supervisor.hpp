#pragma once
// The supervisor of `factorybench resilience`: launches the training job as real child processes
// (`mpirun -np N factorybench train --run-dir DIR --resume …`), watches its exit status and the event log's
// heartbeat, relaunches it until the steps are done, the time budget is spent or the restarts run out, and
// never leaves ranks behind (each attempt runs in its own process group, killed as a whole).
// With policy "drain", a rank whose slot failed or straggled `drain_after` times is moved to a spare slot.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/enum_names.hpp"
#include "resilience/cluster_simulator.hpp"
#include "resilience/goodput_ledger.hpp"

namespace fb::resilience {

// How each attempt is started: `mpirun -np N`, `srun -n N`, or the binary itself (one rank, no launcher).
enum class Launcher { mpirun, srun, none };
inline constexpr EnumNames<Launcher, 3> kLauncherNames{
    {{Launcher::mpirun, "mpirun"}, {Launcher::srun, "srun"}, {Launcher::none, "none"}}};

// With --time-budget and no --steps, the job trains until the budget is spent: this many steps, which the
// supervisor neither logs nor shows as a step count (its progress is the budget's time).
constexpr std::int64_t kStepsUntilBudget = 1'000'000'000;

struct SupervisorOptions {
  int ranks = 1;
  Launcher launcher = Launcher::mpirun;
  std::vector<std::string> launcher_args;
  std::string binary;                   // factorybench (default: /proc/self/exe)
  std::vector<std::string> train_args;  // forwarded to `train` (model, layout, checkpoint options, …)
  std::filesystem::path run_dir;
  std::string faults;
  std::int64_t steps = 0;
  double time_budget_s = 0;  // 0 = none
  int max_restarts = 10;
  DrainPolicy policy = DrainPolicy::none;
  int spares = 0;
  int drain_after = 1;
  double heartbeat_timeout_s = 120;        // the log silent this long: killed, counted as a hang
  std::vector<std::string> exclude_hosts;  // srun: `--exclude` (the supervisor adds the nodes it drains)
  // Pre-flight: `factorybench health` through the same launcher before every (re)launch; ranks that fail it
  // are drained to spare slots (while spares last) and the health check runs again on the new placement.
  bool preflight = false;
  std::vector<std::string> preflight_args;  // health options (--backend, --gemm-floor, ...)
  double preflight_timeout_s = 300;         // a health job running longer is killed (verdict "error")
  // Called on the supervisor's thread after each attempt and pre-flight, and each second while a job runs:
  // the command keeps its report so far then (tools/interrupt_report.hpp), read from the event log.
  std::function<void()> on_progress;
};

// Seconds a job may run past --time-budget before the supervisor kills it: the job itself stops at the first
// step boundary after the deadline (FB_DEADLINE); this covers one that cannot (still initialising, hung).
inline constexpr double kTimeBudgetGraceS = 10;

// Why the supervisor stopped relaunching.
// `unfinished`: a job still running, accounted so far (job_so_far).
enum class StopReason {
  completed,
  time_budget,
  restarts_exhausted,
  rejected_options,
  launch_failed,
  unfinished
};

struct SupervisorResult {
  Ledger ledger;
  std::vector<nlohmann::json> events;
  bool completed = false;
  StopReason stop = StopReason::completed;
  std::string stop_reason;  // in words: "completed", "time budget spent", "restarts exhausted", or the cause
  int preflights = 0, preflight_failures = 0;
  std::vector<nlohmann::json> drains;
  double mttf_before_drain_s = 0, mttf_after_drain_s = 0;
  int failures_before_drain = 0, failures_after_drain = 0;
};

// A job's figures from its event log alone, at job time `now` (wall clock, as the log's `t`), while it may
// still run: what a signal or a kill of the supervisor leaves in the report. The log gets a job_end at `now`
// (`reason` with the attempt and step reached, not completed), as the supervisor's own end would log it;
// drains and pre-flights are counted from their events. Pure.
SupervisorResult job_so_far(std::vector<nlohmann::json> events, double now, const std::string& reason);

// Throws a usage Error naming the first bad option (ranks, steps, restarts, spares, ...).
void validate_supervisor_options(const SupervisorOptions& options);

// Validates, then supervises. Throws usage Errors for bad options; runtime Errors when a launch is
// impossible.
SupervisorResult run_supervisor(const SupervisorOptions& options);

// The launcher command line of one attempt (pure; for tests and the report). The attempt writes its
// report to RUN_DIR/attempt-N.json.
std::vector<std::string> launch_command(const SupervisorOptions& options, int attempt);
// The pre-flight health job before attempt `attempt` (round: 1, 2, ... after drains), writing `report`.
std::vector<std::string> preflight_command(const SupervisorOptions& options, int attempt, int round,
                                           const std::filesystem::path& report);

// "process rank 1 with PID 123 on node x exited on signal 9" (Open MPI) or "task 1: Killed" (Slurm) → 1.
int failed_rank_from_launcher_output(const std::string& text);

// srun: "srun: error: node7: task 3: Killed" → "node7" (the node of the first task that failed); "" if none.
std::string failed_host_from_launcher_output(const std::string& text);

// srun: the step name of an attempt, unique per run directory, used to find the step's id for scancel.
std::string srun_step_name(const SupervisorOptions& options, int attempt);

// `squeue -h -s -o "%i %j"` output → ids ("123.4") of the steps called `name`.
std::vector<std::string> slurm_steps_named(const std::string& squeue_output, const std::string& name);

}  // namespace fb::resilience
