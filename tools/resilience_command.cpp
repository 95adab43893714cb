// factorybench resilience: the training workload under injected faults, supervised (launch, watch, relaunch),
// with goodput accounting from the event log. Also defines the resilience options `train` takes.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/mpi_context.hpp"
#include "core/rank_collectives.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"
#include "reports/report_json.hpp"
#include "reports/resilience_console.hpp"
#include "resilience/checkpoint_space.hpp"
#include "resilience/event_log.hpp"
#include "resilience/fault_plan.hpp"
#include "resilience/resilience_result.hpp"
#include "resilience/run_dir_lock.hpp"
#include "resilience/supervisor.hpp"
#include "tools/commands.hpp"
#include "tools/enum_option.hpp"
#include "tools/injection_scope.hpp"
#include "tools/interrupt_report.hpp"
#include "tools/resilience_options.hpp"
#include "tools/resilience_so_far.hpp"
#include "tools/shell_words.hpp"
#include "tools/suite_file.hpp"
#include "tools/train_options.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/train_step.hpp"

namespace fb::tools {

void add_resilience_options(CLI::App& sub, resilience::ResilienceOptions& o, std::string& state_bytes,
                            std::string& mtbf) {
  sub.add_option("--run-dir", o.run_dir, "Run directory: events.jsonl, checkpoints/, heartbeats");
  sub.add_option("--checkpoint-every", o.checkpoint_every,
                 "Checkpoint every N steps (default: no checkpoints)")
      ->check(CLI::Validator(
          [](const std::string& text) {
            // 0 is the default's "never": given, it is a typo or a misunderstanding, and checkpoint options
            // beside it would be refused as if it were absent.
            return text == "0"
                       ? std::string("0 saves no checkpoint: leave the option out for none, or give N >= 1")
                       : std::string();
          },
          "", "steps"));
  sub.add_option(
      "--checkpoint-interval", o.checkpoint_interval,
      "Checkpoint every DURATION, or auto (Daly's interval from the measured save cost and --mtbf)");
  sub.add_option("--mtbf", mtbf, "Mean time between failures for --checkpoint-interval auto (e.g. 30m)");
  sub.add_option("--keep", o.keep,
                 "Verified checkpoints kept beside the newest (older ones removed once this many verify)")
      ->capture_default_str();
  sub.add_option(
      "--state-bytes", state_bytes,
      "Checkpoint bytes per rank (default: the model shard's fp32 master weights and two moments)");
  sub.add_flag("--async-checkpoint", o.async_checkpoint, "Snapshot to host memory, write in the background");
  sub.add_flag("--resume", o.resume, "Resume from the newest checkpoint that verifies");
  // --fault-plan: the name the shared CLI contract (DESIGN.md) gives it.
  sub.add_option("--faults,--fault-plan", o.faults,
                 "Fault plan: KIND@step=N[,rank=R]...;... | random:mtbf=... | FILE.json | none");
  sub.add_option("--hang-timeout", o.hang_timeout, "Watchdog timeout: DURATION or auto")
      ->capture_default_str();
  sub.add_option("--straggler-threshold", o.straggler_threshold,
                 "Straggler when median/own time is below this")
      ->capture_default_str();
  sub.add_option("--check-every", o.check_every, "Straggler and SDC checks every N steps")
      ->capture_default_str();
}

std::vector<std::string> resilience_options_argv(const resilience::ResilienceOptions& o,
                                                 const std::string& state_bytes, const std::string& mtbf) {
  const resilience::ResilienceOptions d;
  std::vector<std::string> a;
  const auto put = [&](const char* name, const std::string& value, const std::string& default_value) {
    if (value != default_value) a.insert(a.end(), {name, value});
  };
  put("--run-dir", o.run_dir, d.run_dir);
  put("--checkpoint-every", std::to_string(o.checkpoint_every), std::to_string(d.checkpoint_every));
  put("--checkpoint-interval", o.checkpoint_interval, d.checkpoint_interval);
  put("--mtbf", mtbf, "");
  put("--keep", std::to_string(o.keep), std::to_string(d.keep));
  put("--state-bytes", state_bytes, "");
  if (o.async_checkpoint) a.push_back("--async-checkpoint");
  if (o.resume) a.push_back("--resume");
  put("--faults", o.faults, d.faults);
  put("--hang-timeout", o.hang_timeout, d.hang_timeout);
  put("--straggler-threshold", fmt::format("{}", o.straggler_threshold),
      fmt::format("{}", d.straggler_threshold));
  put("--check-every", std::to_string(o.check_every), std::to_string(d.check_every));
  return a;
}

nlohmann::json resilience_params(const resilience::ResilienceOptions& o) {
  nlohmann::json p = nlohmann::json::object();
  if (o.run_dir.empty()) return p;
  p["run_dir"] = o.run_dir;
  p["checkpoint_every"] = o.checkpoint_every > 0 ? nlohmann::json(o.checkpoint_every) : nlohmann::json();
  p["checkpoint_interval"] =
      o.checkpoint_interval.empty() ? nlohmann::json() : nlohmann::json(o.checkpoint_interval);
  p["keep"] = o.keep;
  p["state_bytes"] =
      o.state_bytes > 0 ? nlohmann::json(o.state_bytes) : nlohmann::json();  // null: the model's
  p["async_checkpoint"] = o.async_checkpoint;
  p["resume"] = o.resume;
  p["faults"] = o.faults.empty() ? nlohmann::json() : nlohmann::json(o.faults);
  p["hang_timeout"] = o.hang_timeout;
  p["straggler_threshold"] = o.straggler_threshold;
  p["check_every"] = o.check_every;
  p["mtbf_s"] = o.mtbf_s > 0 ? nlohmann::json(o.mtbf_s) : nlohmann::json();
  return p;
}

namespace {

// True when the plan can fire a fault of `kind`: an explicit one, or a share of the random mix.
bool plan_injects(const resilience::FaultPlan& plan, resilience::FaultKind kind) {
  bool found =
      std::any_of(plan.faults.begin(), plan.faults.end(), [&](const auto& f) { return f.kind == kind; });
  if (plan.random)
    for (const auto& [k, share] : plan.random->mix) found = found || (k == kind && share > 0);
  return found;
}

// A checkpoint fault in a run that saves no checkpoint would only log "nothing to act on": a run that
// reads as tested against a failed or corrupt checkpoint, and was not.
void check_checkpoint_faults_act(const resilience::FaultPlan& plan, const resilience::ResilienceOptions& o) {
  if (o.checkpoint_every > 0 || !o.checkpoint_interval.empty()) return;
  if (plan_injects(plan, resilience::FaultKind::ckpt_write_fail))
    throw usage_error(
        "--faults injects ckpt-write-fail, which fails a checkpoint save, and this run saves none: add "
        "--checkpoint-every N or --checkpoint-interval DURATION|auto");
  // A resumed run holds the checkpoint it started from: that one can be corrupted.
  if (!o.resume && plan_injects(plan, resilience::FaultKind::ckpt_corrupt))
    throw usage_error(
        "--faults injects ckpt-corrupt, which corrupts the newest checkpoint, and this run saves none: add "
        "--checkpoint-every N or --checkpoint-interval DURATION|auto");
}

// A fatal fault (crash, hang, sdc, nan) in a run that saves no checkpoint restarts the job from the step it
// began at: every step before the failure is wasted. A run may mean that (the cost of no checkpointing), so
// it is said, not refused.
void warn_restarts_from_scratch(const resilience::FaultPlan& plan, const resilience::ResilienceOptions& o) {
  if (o.checkpoint_every > 0 || !o.checkpoint_interval.empty()) return;
  std::optional<resilience::FaultKind> fatal;
  for (const auto& f : plan.faults)
    if (!fatal && resilience::is_fatal(f.kind)) fatal = f.kind;
  if (plan.random)
    for (const auto& [kind, share] : plan.random->mix)
      if (!fatal && share > 0 && resilience::is_fatal(kind)) fatal = kind;
  if (fatal)
    log::warn(
        "--faults injects {} and this run saves no checkpoint: each failure restarts the job from the "
        "step it began at, and every step before it is wasted (--checkpoint-every N or "
        "--checkpoint-interval DURATION|auto to measure recovery from a checkpoint)",
        resilience::to_string(*fatal));
}

// SDC is detected by the replicas' checksum vote: with one replica there is nothing to compare, and with the
// dense optimizer state sharded over DP a flipped master weight reaches every replica through the weights'
// all-gather, so no vote could see it.
void check_sdc_detectable(const resilience::FaultPlan& plan, const workloads::TrainOptions& train) {
  if (!plan_injects(plan, resilience::FaultKind::sdc)) return;
  if (train.parallel.dp < 2)
    throw usage_error(
        fmt::format("--faults injects sdc, which nothing detects with --dp {}: the replica vote compares the "
                    "data-parallel replicas' weights; use 2 or more",
                    train.parallel.dp));
  if (train.shape.distributed_optimizer)
    throw usage_error(
        "--faults injects sdc, which --distributed-optimizer cannot detect: the replica vote needs a "
        "replicated master copy and ZeRO shards it over --dp; drop one of them");
}

double parse_mtbf(const std::string& text) {
  const double s = parse_mtbf_duration(text, "--mtbf");
  if (!(s > 0)) throw usage_error(fmt::format("invalid --mtbf {}: must be positive", text));
  return s;
}

// The first committed checkpoint's step directory in any of `dirs`.
std::optional<std::filesystem::path> first_checkpoint_in(std::initializer_list<std::filesystem::path> dirs) {
  std::error_code ec;
  // Committed ones: a step directory with its manifest. A save cut short before its commit (shard files
  // alone) is no checkpoint: a fresh start there is what --resume would do too (train from step 0).
  for (const auto& dir : dirs)
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().filename().string().rfind("step-", 0) == 0 &&
          std::filesystem::is_regular_file(e.path() / "manifest.json", ec))
        return e.path();
  return std::nullopt;
}

// --state-bytes against this host, before a launch or a run dir is touched: each of `ranks_here` ranks holds
// its checkpoint buffer(s) in host memory, and the run dir holds up to --keep + 2 checkpoints of all `ranks`.
// The job checks its own host again once the model's state size is known
// (resilience/train_checkpointing.cpp).
void check_state_bytes_fit(const resilience::ResilienceOptions& res, const std::string& text,
                           std::uint64_t bytes, std::uint64_t ranks_here, int ranks) {
  if (bytes == 0)  // 0 is the option's unset value: the model's state
    throw usage_error(fmt::format(
        "invalid --state-bytes {}: must be positive (leave the option out for the model's state)", text));
  const std::uint64_t copies = res.async_checkpoint ? 2 : 1;
  const std::uint64_t available = read_host_info().memory_available_bytes;
  if (available > 0 &&
      static_cast<double>(bytes) * copies * ranks_here > 0.9 * static_cast<double>(available))
    throw usage_error(fmt::format(
        "invalid --state-bytes {}: {} rank(s) on this host x {} checkpoint buffer(s) of it exceed 90% of "
        "the host's available memory ({})",
        text, ranks_here, copies, format_bytes(available)));
  if (res.run_dir.empty() || (res.checkpoint_every <= 0 && res.checkpoint_interval.empty())) return;
  if (const auto problem = resilience::checkpoint_space_problem(
          res.run_dir, res.keep, static_cast<double>(bytes) * static_cast<double>(ranks),
          fmt::format("of {} rank(s)", ranks)))
    throw usage_error(fmt::format("invalid --state-bytes {}: {}", text, *problem));
}

}  // namespace

void warn_unreachable_faults(const resilience::FaultPlan& plan, std::int64_t steps) {
  for (const auto& f : plan.faults)
    if (f.step && *f.step > steps)
      log::warn("--faults: {} never fires: the job runs --steps {}", f.text, steps);
}

void warn_unreachable_checkpoints(const resilience::ResilienceOptions& o, std::int64_t steps) {
  if (o.checkpoint_every > steps)
    log::warn("--checkpoint-every {} is beyond --steps {}: no checkpoint is saved", o.checkpoint_every,
              steps);
}

void check_output_outside_run_dir(const std::string& output, const std::string& run_dir) {
  // A supervised job's -o is its attempt report, which its supervisor names in the run dir and reads.
  if (std::getenv("FB_SUPERVISED")) return;
  if (!output.empty() && !run_dir.empty() && resilience::is_run_dir_file(run_dir, output))
    throw usage_error(fmt::format(
        "invalid -o/--output {}: a file the job keeps in --run-dir {} (its event log, checkpoints, locks, "
        "attempt reports), which a restore or relaunch reads; write the report beside them ({}/report.json) "
        "or elsewhere",
        output, run_dir, run_dir));
}

TrainResilience check_train_resilience(resilience::ResilienceOptions o, const std::string& state_bytes,
                                       const std::string& mtbf, int world, int ranks_on_host,
                                       const workloads::TrainOptions& train, std::uint64_t seed) {
  if (!state_bytes.empty()) o.state_bytes = parse_size(state_bytes, "--state-bytes");
  if (!mtbf.empty()) o.mtbf_s = parse_mtbf(mtbf);
  o.seed = seed;
  resilience::validate_resilience_options(o);
  if (o.run_dir.empty()) return {std::move(o), {}};
  // The lock's wait, read as the run takes the lock (after the backend started), is checked with the rest.
  (void)resilience::run_dir_lock_wait();
  if (!o.resume) {
    // A fresh start where a job runs now is told so first: the checkpoints are that job's, and --resume
    // (which the message below suggests) would be refused as well. (A --resume waits for the lock instead: a
    // relaunch's previous attempt may still be exiting.)
    if (const auto holder = resilience::run_dir_holder(o.run_dir))
      throw usage_error(resilience::run_dir_in_use_message(o.run_dir, *holder));
    // A fresh run in a run dir with another run's checkpoints would mix them: its commits and the old ones
    // side by side, and a later --resume taking whichever is newest.
    if (const auto found = first_checkpoint_in({std::filesystem::path(o.run_dir) / "checkpoints"}))
      throw usage_error(fmt::format(
          "--run-dir {} already holds checkpoints ({}): add --resume to continue from them, or choose "
          "another directory",
          o.run_dir, found->string()));
  }
  if (!state_bytes.empty())
    check_state_bytes_fit(o, state_bytes, o.state_bytes,
                          static_cast<std::uint64_t>(std::max(ranks_on_host, 1)), world);
  // Loaded against the real world size before the run dir is touched: a bad --faults leaves nothing
  // behind (issue 16).
  auto plan = resilience::job_fault_plan(o, world);
  check_sdc_detectable(plan, train);
  check_checkpoint_faults_act(plan, o);
  return {std::move(o), std::move(plan)};
}

std::unique_ptr<workloads::TrainHooks> make_train_hooks(TrainResilience checked, MpiContext& mpi,
                                                        const workloads::TrainOptions& train,
                                                        const workloads::ModelConfig& model) {
  if (checked.options.run_dir.empty()) return nullptr;
  // What the checkpointed state is: a resume with another model of the same size, or another layout, dtype
  // or optimizer sharding whose shards happen to match, is another job's state, not this one's.
  checked.options.job =
      fmt::format("model {} ({:016x}), layers {}, tp{} pp{} dp{} ep{}, {}{}", model.name, model.file_digest,
                  train.layers > 0 ? std::to_string(train.layers) : std::string("all"), train.parallel.tp,
                  train.parallel.pp, train.parallel.dp, train.parallel.ep, to_string(train.shape.dtype),
                  train.shape.distributed_optimizer ? ", distributed optimizer" : "");
  // Data-parallel replicas hold the same dense weights: ranks with the same tensor (and pipeline) coordinate.
  const auto c = workloads::rank_coords(mpi.rank(), train.parallel);
  const int group = static_cast<int>(c.t + c.p * train.parallel.tp);
  checked.options.last_step = train.steps;
  return std::make_unique<resilience::TrainResilienceHooks>(std::move(checked.options), mpi, group,
                                                            std::move(checked.plan));
}

namespace {

// --policy: one supervisor policy, or both in turn with the same fault seed.
enum class PolicyChoice { none, drain, compare };
constexpr EnumNames<PolicyChoice, 3> kPolicyChoiceNames{
    {{PolicyChoice::none, "none"}, {PolicyChoice::drain, "drain"}, {PolicyChoice::compare, "compare"}}};

std::vector<resilience::DrainPolicy> policies_of(PolicyChoice c) {
  using resilience::DrainPolicy;
  switch (c) {
    case PolicyChoice::drain:
      return {DrainPolicy::drain};
    case PolicyChoice::compare:
      return {DrainPolicy::none, DrainPolicy::drain};
    case PolicyChoice::none:
      break;
  }
  return {DrainPolicy::none};
}

struct ResilienceCommandOptions {
  int ranks = 1;
  resilience::Launcher launcher = resilience::Launcher::mpirun;
  std::string launcher_args;
  TrainCliOptions train;
  resilience::ResilienceOptions res;
  std::string state_bytes, mtbf, time_budget;
  int max_restarts = 10, spares = 0, drain_after = 1;
  PolicyChoice policy = PolicyChoice::none;
  std::string heartbeat_timeout = "120s";
  bool preflight = false;
  std::string preflight_args, preflight_timeout = "300s";
  bool steps_given =
      false;  // --steps on the command line (with --time-budget alone, the budget ends the job)
  bool drain_after_given = false, preflight_timeout_given = false;
};

// The training job's arguments: the global options it needs, then every train and resilience option as
// parsed (one serializer each), less those the supervisor sets per attempt (--run-dir, --steps, --resume,
// --warmup-steps, --faults: resilience/job_launch.cpp launch_command).
std::vector<std::string> forwarded_train_args(const ResilienceCommandOptions& o, const GlobalOptions& g) {
  std::vector<std::string> a{"--seed", std::to_string(g.seed), "--backend", g.backend, "--log-level", "warn"};
  // The attempts sample as asked (their reports, attempt-K.json, carry it); the supervisor runs no device.
  if (g.telemetry != GlobalOptions{}.telemetry) a.insert(a.end(), {"--telemetry", g.telemetry});
  if (g.telemetry_interval) a.insert(a.end(), {"--telemetry-interval", *g.telemetry_interval});
  auto train = o.train;
  train.steps = TrainCliOptions{}.steps;
  train.warmup_steps = TrainCliOptions{}.warmup_steps;
  for (auto& arg : train_options_argv(train)) a.push_back(std::move(arg));
  auto res = o.res;
  res.run_dir.clear();
  res.resume = false;
  res.faults.clear();
  for (auto& arg : resilience_options_argv(res, o.state_bytes, o.mtbf)) a.push_back(std::move(arg));
  return a;
}

// What the Result records of the options (resilience/resilience_result.hpp).
resilience::ResilienceRunParams run_params(const ResilienceCommandOptions& o, const std::string& run_dir) {
  resilience::ResilienceRunParams p;
  p.model = o.train.model;
  p.ranks = o.ranks;
  p.launcher = o.launcher;
  p.faults = o.res.faults;
  p.steps = o.train.steps;
  p.steps_given = o.steps_given;
  p.checkpoint_every = o.res.checkpoint_every;
  p.checkpoint_interval = o.res.checkpoint_interval;
  p.max_restarts = o.max_restarts;
  p.spares = o.spares;
  p.drain_after = o.drain_after;
  p.async_checkpoint = o.res.async_checkpoint;
  p.state_bytes = o.state_bytes;
  p.mtbf = o.mtbf;
  p.time_budget = o.time_budget;
  p.preflight = o.preflight;
  p.run_dir = run_dir;
  auto train = o.train;  // steps and warm-up are the supervisor's, recorded above
  train.steps = TrainCliOptions{}.steps;
  train.warmup_steps = TrainCliOptions{}.warmup_steps;
  for (const auto& arg : train_options_argv(train)) {
    if (!p.train_options.empty()) p.train_options += ' ';
    p.train_options += shell_quote(arg);
  }
  return p;
}

void supervise(const ResilienceCommandOptions& o, const resilience::FaultPlan& plan,
               resilience::SupervisorOptions& s, Session& session, reports::Report& report,
               ResilienceSoFar& so_far);

// True when every process of a launch starts on this host: mpirun given no hosts (-H, --host, --hostfile,
// --machinefile) or no launcher at all.
bool all_ranks_here(const ResilienceCommandOptions& o) {
  if (o.launcher == resilience::Launcher::srun) return false;
  for (const auto& a : split_shell_words(o.launcher_args, "--launcher-args"))
    if (a == "-H" || a.starts_with("--host") || a.starts_with("-host") || a.starts_with("--machinefile") ||
        a.starts_with("-machinefile") || a.starts_with("--default-hostfile"))
      return false;
  return true;
}

// --ranks + --spares: at most 2^17 (beyond the largest published training jobs), and, when they all start
// on this host, at most 16 per core (more is a typo, not a test).
void check_rank_count(const ResilienceCommandOptions& o) {
  const long long total = static_cast<long long>(o.ranks) + o.spares;
  if (total > (1 << 17))
    throw usage_error(
        o.spares > 0 ? fmt::format("invalid --ranks {}: {} ranks with --spares {} exceed the limit of {}",
                                   o.ranks, total, o.spares, 1 << 17)
                     : fmt::format("invalid --ranks {}: more than the limit of {} ranks", o.ranks, 1 << 17));
  const long long cores = std::max(1u, std::thread::hardware_concurrency());
  if (all_ranks_here(o) && total > 16 * cores)
    throw usage_error(fmt::format(
        "invalid --ranks {}: {} processes would start on this host of {} cores (name the hosts with "
        "--launcher-args \"--hostfile FILE\")",
        o.ranks, total, cores));
}

int run_resilience(const ResilienceCommandOptions& o, Session& session) {
  if (o.res.faults.empty())
    throw usage_error(
        "--faults SPEC|FILE is required (use 'random:mtbf=…' for a random plan, 'none' for a baseline "
        "without faults)");
  // Validate the plan and options here, before anything is launched.
  check_no_injection(session, "resilience");
  if (session.is_root()) session.check_output_writable();
  if (o.spares < 0) throw usage_error(fmt::format("invalid --spares {}: must not be negative", o.spares));
  // A drained rank moves to a spare slot; with none, drain never acts, and a compare run compares none
  // with itself.
  if (o.policy != PolicyChoice::none && o.spares == 0)
    throw usage_error(
        fmt::format("--policy {} needs --spares N: a drained rank moves to a spare slot, and "
                    "with none nothing is ever drained",
                    o.policy == PolicyChoice::drain ? "drain" : "compare"));
  // Spares are used by drain (--policy drain or compare) and by --preflight, which drains failing ranks.
  if (o.spares > 0 && o.policy == PolicyChoice::none && !o.preflight)
    throw usage_error(
        "--spares acts with --policy drain (or compare) or --preflight: with --policy none and no pre-flight "
        "no rank is ever moved to a spare");
  if (o.drain_after_given && o.policy == PolicyChoice::none)
    throw usage_error("--drain-after acts only with --policy drain or compare");
  if (o.preflight_timeout_given && !o.preflight) throw usage_error("--preflight-timeout needs --preflight");
  if (o.ranks < 1) throw usage_error(fmt::format("invalid --ranks {}: must be at least 1", o.ranks));
  check_rank_count(o);
  // The supervisor's ledger starts at the job's start, so a supervised job never continues another's
  // checkpoints; it must not delete them either.
  check_output_outside_run_dir(session.options().output, o.res.run_dir);
  if (o.res.resume)
    throw usage_error(
        "resilience --resume: a supervised job starts from step 0 (its goodput ledger begins at the job's "
        "start); continue a run's checkpoints with train --run-dir DIR --resume");
  // Why --run-dir cannot take a fresh job now ("" when it can). Rank 0 supervises, so rank 0 alone asks:
  // another rank of an `mpirun -np N` launch would find rank 0's own supervisor lock there once it began.
  const auto run_dir_taken = [&]() -> std::string {
    if (o.res.run_dir.empty()) return {};
    const std::filesystem::path dir(o.res.run_dir);
    // A job of its own, or of a train command, running there now: the fresh start below would delete its
    // event log under it. Refused as the training job itself would refuse it, before anything is touched.
    for (const auto& d : {dir, dir / "none", dir / "drain"})
      if (const auto holder = resilience::run_dir_holder(d))
        return resilience::run_dir_in_use_message(d, *holder);
    // The job's own checkpoints, or (--policy compare) those of each policy's job.
    if (const auto found = first_checkpoint_in(
            {dir / "checkpoints", dir / "none" / "checkpoints", dir / "drain" / "checkpoints"}))
      return fmt::format(
          "--run-dir {} already holds checkpoints ({}); resilience starts a fresh job there: choose "
          "another directory, remove them, or continue them with train --run-dir DIR --resume",
          o.res.run_dir, found->string());
    return {};
  };
  const auto plan = resilience::load_fault_plan(o.res.faults, o.ranks + o.spares, 7 * 86400.0,
                                                session.options().seed, o.spares);
  auto check = o.res;
  check.run_dir = "x";
  if (!o.mtbf.empty()) check.mtbf_s = parse_mtbf(o.mtbf);
  if (!o.state_bytes.empty())
    check.state_bytes = std::max<std::uint64_t>(1, parse_size(o.state_bytes, "--state-bytes"));
  resilience::validate_resilience_options(check);
  // Every attempt's training job takes the run dir's lock, reading this variable: a bad one is this line,
  // not attempts that each exit 2.
  (void)resilience::run_dir_lock_wait();
  // Given no hosts mpirun puts all --ranks here; otherwise (a hostfile, srun) at least one rank is.
  if (!o.state_bytes.empty())
    check_state_bytes_fit(o.res, o.state_bytes, parse_size(o.state_bytes, "--state-bytes"),
                          all_ranks_here(o) ? static_cast<std::uint64_t>(o.ranks) : 1, o.ranks);
  // The training options as the job will see them (model, layout): a bad one is named before any launch.
  const auto train = make_train_options(o.train, BackendKind::host, o.ranks, session.options().seed);
  (void)workloads::prepare_training(train, o.ranks);
  // What the ranks' backend cannot train is refused now, as train refuses it, rather than by a launched job
  // (exit 1, and a report of a job that never trained): fp16 and fp8 on any backend (the one named, else
  // cuda's words), an attention engine the backend named cannot run (reference off the host, cudnn off
  // cuda; a cuda named in a build without it is the job's own error, its backend's).
  const auto backend_choice = parse_backend_choice(session.options().backend);
  const bool host = backend_choice == BackendChoice::host;
  if (const auto why =
          workloads::train_dtype_unsupported(host ? BackendKind::host : BackendKind::cuda, train.shape.dtype);
      !why.empty())
    throw unsupported_error(why);
  if (host || (backend_choice == BackendChoice::cuda && cuda_compiled_in()))
    if (const auto why = kernels::attention_engine_unsupported(host ? BackendKind::host : BackendKind::cuda,
                                                               train.attention_engine);
        !why.empty())
      throw unsupported_error(why);
  check_sdc_detectable(plan, train);
  check_checkpoint_faults_act(plan, o.res);
  resilience::SupervisorOptions s;
  s.ranks = o.ranks;
  s.launcher = o.launcher;
  s.launcher_args = split_shell_words(o.launcher_args, "--launcher-args");
  // --launcher none runs the one rank itself: its "launcher arguments" would be run as the command.
  if (o.launcher == resilience::Launcher::none && !s.launcher_args.empty())
    throw usage_error(
        "--launcher-args needs a launcher (--launcher mpirun or srun): --launcher none runs its one "
        "rank directly");
  s.train_args = forwarded_train_args(o, session.options());
  s.faults = o.res.faults;
  s.time_budget_s = o.time_budget.empty() ? 0 : parse_duration(o.time_budget, "--time-budget");
  if (!o.time_budget.empty() && !(s.time_budget_s > 0))
    throw usage_error(fmt::format("invalid --time-budget '{}': must be positive", o.time_budget));
  s.steps = !o.steps_given && s.time_budget_s > 0 ? resilience::kStepsUntilBudget : o.train.steps;
  s.preflight = o.preflight;
  s.preflight_args = {"--backend",   session.options().backend,
                      "--seed",      std::to_string(session.options().seed),
                      "--log-level", "warn"};
  for (auto& a : split_shell_words(o.preflight_args, "--preflight-args"))
    s.preflight_args.push_back(std::move(a));
  s.preflight_timeout_s = parse_duration(o.preflight_timeout, "--preflight-timeout");
  if (!o.preflight_args.empty() && !o.preflight) throw usage_error("--preflight-args needs --preflight");
  // health's words as the pre-flight launch will give them: a typo is this line, not a job that fails at its
  // first pre-flight (exit 1, a report of a job that never trained). Values a run judges stay the run's.
  if (o.preflight) {
    std::vector<std::string> words{"health"};
    words.insert(words.end(), s.preflight_args.begin(), s.preflight_args.end());
    check_command_words(words, "--preflight-args");
  }
  s.max_restarts = o.max_restarts;
  s.spares = o.spares;
  s.drain_after = o.drain_after;
  s.heartbeat_timeout_s = parse_duration(o.heartbeat_timeout, "--heartbeat-timeout");
  resilience::validate_supervisor_options(s);
  if (session.checking_only()) {  // a suite's preflight: validated, nothing run (the ranks agree on errors)
    if (const auto taken = session.is_root() ? run_dir_taken() : std::string(); !taken.empty())
      throw usage_error(taken);
    return 0;
  }
  // A --run-dir that cannot be one (a file, a read-only place) is the user's to change: exit 2, as train says
  // it, not the supervisor's "cannot open the event log" (exit 3) after the report was begun.
  // Rank 0 supervises, so rank 0 decides; every rank of a suite's job stops alike.
  std::string run_dir_error;
  if (!o.res.run_dir.empty() && session.is_root()) {
    run_dir_error = run_dir_taken();  // in use, or holds checkpoints: nothing is made or touched
    if (run_dir_error.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(o.res.run_dir, ec);
      if (ec || !std::filesystem::is_directory(o.res.run_dir, ec))
        run_dir_error = fmt::format("--run-dir {}: cannot create it: {}", o.res.run_dir,
                                    ec ? ec.message() : std::string("not a directory"));
      else if (::access(o.res.run_dir.c_str(), W_OK | X_OK) != 0)
        run_dir_error =
            fmt::format("--run-dir {}: cannot write in it: {}", o.res.run_dir, std::strerror(errno));
    }
  }
  if (session.mpi_started()) {
    int ok = run_dir_error.empty() ? 1 : 0;
    broadcast(session.mpi(), ok);
    if (!ok && run_dir_error.empty())
      run_dir_error = fmt::format("--run-dir {}: rank 0 cannot use it", o.res.run_dir);
  }
  if (!run_dir_error.empty()) throw usage_error(run_dir_error);
  if (session.is_root()) {
    warn_unreachable_faults(plan, s.steps);
    warn_unreachable_checkpoints(o.res, s.steps);
    warn_restarts_from_scratch(plan, o.res);
  }

  // Run as an MPI job's rank (a `suite` step, or `mpirun -np N factorybench resilience`): one supervisor,
  // on rank 0; it launches its own job (its launcher gets none of this job's MPI wiring). Under a suite the
  // other ranks wait for its exit status without spinning on the cores the training job needs; launched
  // bare, they have nothing to do.
  if (!session.mpi_started() && launcher_rank() != 0) return 0;
  auto report = session.begin_report(false);  // collective when MPI is up: every rank, before the split
  // A signal or a kill of the supervisor keeps the jobs so far, the running one's figures read from its
  // event log (tools/resilience_so_far.hpp); -o holds them as the job goes (after each attempt, with each
  // progress line).
  const auto so_far = std::make_shared<ResilienceSoFar>(report, o.policy == PolicyChoice::compare);
  s.on_progress = [&session] { session.save_so_far(); };
  std::optional<InterruptReport> interrupted;
  interrupted.emplace(session, "resilience", ResilienceSoFar::reader(so_far), [](const reports::Report& r) {
    std::cout << "# resilience: stopped by a signal; the job so far:\n";
    reports::print_resilience(std::cout, r, resilience::kWallTimeParts);
  });
  if (session.mpi_started() && session.mpi().size() > 1) {
    auto& mpi = session.mpi();
    if (mpi.is_root()) {
      try {
        supervise(o, plan, s, session, report, *so_far);
      } catch (...) {
        mpi.barrier_sleeping(
            20);  // the others must not wait forever; main reports the error and ends the job
        throw;
      }
    }
    mpi.barrier_sleeping(20);
    interrupted.reset();
    return session.finish(report);  // collective (telemetry); only rank 0's report has results
  }
  supervise(o, plan, s, session, report, *so_far);
  interrupted.reset();
  return session.finish(report);
}

void supervise(const ResilienceCommandOptions& o, const resilience::FaultPlan& plan,
               resilience::SupervisorOptions& s, Session& session, reports::Report& report,
               ResilienceSoFar& so_far) {
  std::filesystem::path run_dir = o.res.run_dir;
  if (run_dir.empty()) {  // a fresh directory of its own, named in the report and on stdout
    std::string templ = (std::filesystem::temp_directory_path() / "factorybench-resilience-XXXXXX").string();
    if (!::mkdtemp(templ.data()))
      throw runtime_error(
          fmt::format("cannot create a run directory from {}: {}", templ, std::strerror(errno)));
    run_dir = templ;
    log::info("run directory: {} (--run-dir to choose one)", run_dir.string());
  }
  const auto policies = policies_of(o.policy);
  std::vector<resilience::SupervisorResult> runs;
  for (const auto policy_value : policies) {
    const std::string policy(enum_name(resilience::kDrainPolicyNames, policy_value));
    s.policy = policy_value;
    s.run_dir = policies.size() > 1 ? run_dir / policy : run_dir;
    // Held for the job's life, relaunch gaps included: another resilience run on this run dir is refused
    // instead of clearing it between two attempts.
    const resilience::SupervisorRunDirLock hold(s.run_dir);
    std::error_code ec;
    std::filesystem::remove_all(s.run_dir / "checkpoints", ec);  // a fresh job in this run dir
    std::filesystem::remove(s.run_dir / "events.jsonl", ec);
    std::filesystem::remove(s.run_dir / "faults.fired", ec);
    // An earlier job's attempt reports and logs, and its ranks' heartbeats and call states, would sit beside
    // this job's (its attempt-3.json after this job's attempt-1).
    std::filesystem::remove_all(s.run_dir / "heartbeat", ec);
    std::filesystem::remove_all(s.run_dir / "calls", ec);
    std::vector<std::filesystem::path> stale;
    for (const auto& e : std::filesystem::directory_iterator(s.run_dir, ec)) {
      const auto name = e.path().filename().string();
      if (name.starts_with("attempt-") && (name.ends_with(".json") || name.ends_with(".log")))
        stale.push_back(e.path());
    }
    for (const auto& p : stale) std::filesystem::remove(p, ec);
    so_far.running(policy, s.run_dir, run_params(o, s.run_dir.string()));
    runs.push_back(resilience::run_supervisor(s));
    if (report.run.value("backend", "") == "none") adopt_job_run(report, s.run_dir);
    report.results.push_back(
        resilience::resilience_result(runs.back(), policy, run_params(o, s.run_dir.string())));
    // A planned fault that never fired (the job ended before its time, its slot was a spare never used):
    // the run is not tested against it, and says so. Explicit plans only: a random one's later arrivals
    // lie beyond any run by design.
    if (!plan.random) {
      std::set<std::string> fired;
      std::set<int> drained;  // slots a drain took out of service: their later faults had no rank to hit
      for (const auto& e : runs.back().events) {
        if (e.value("type", "") == resilience::event::fault_injected) fired.insert(e.value("spec", ""));
        if (e.value("type", "") == resilience::event::drain) drained.insert(e.value("from_slot", -1));
      }
      nlohmann::json not_fired = nlohmann::json::array();
      for (const auto& f : plan.faults)
        if (!fired.count(f.text)) {
          not_fired.push_back(f.text);
          if (f.step && *f.step > s.steps) continue;  // said before the run (warn_unreachable_faults)
          log::warn(
              "--faults: {} never fired{}: {}", f.text, policies.size() > 1 ? " (policy " + policy + ")" : "",
              drained.count(f.rank)
                  ? fmt::format("slot {} was drained before it came due", f.rank)
                  : std::string("the job ended before it came due, or its slot was a spare never used"));
        }
      if (!not_fired.empty()) report.results.back().extra["faults_not_fired"] = not_fired;
    }
    // Moved into the report (the summary reads the ledgers alone): one copy of the job's events, not two.
    for (auto& e : runs.back().events) {
      if (policies.size() > 1) e["policy"] = policy;
      report.events.push_back(std::move(e));
    }
    runs.back().events.clear();
    so_far.finished(report, runs);
  }
  report.summary.update(resilience::resilience_summary(runs));
  // Under compare the summary's totals (productive_s, badput_s, wall_s) are the last job's: named, so that
  // they are not read as both jobs'.
  if (policies.size() > 1)
    report.summary["totals_policy"] = std::string(enum_name(resilience::kDrainPolicyNames, policies.back()));
  if (!session.options().quiet) {
    reports::print_resilience(std::cout, report, resilience::kWallTimeParts);
    std::cout.flush();
  }
}

}  // namespace

Command add_resilience_command(CLI::App& app) {
  auto opt = std::make_shared<ResilienceCommandOptions>();
  auto* sub = app.add_subcommand(
      "resilience", "Training under injected faults, supervised and relaunched: goodput, ETTR, MTTF, MTTR");
  sub->add_option("--ranks", opt->ranks, "Ranks per attempt")->capture_default_str();
  add_enum_option(*sub, "--launcher", opt->launcher, resilience::kLauncherNames, "How each attempt starts");
  sub->add_option("--launcher-args", opt->launcher_args, "Extra launcher arguments (quoted)");
  add_train_options(*sub, opt->train);
  add_resilience_options(*sub, opt->res, opt->state_bytes, opt->mtbf);
  // The supervisor sets --resume per attempt; given here it is refused with the reason, and not offered.
  sub->get_option("--resume")->group("");
  sub->get_option("--faults")
      ->description(
          "Fault plan (required): KIND@step=N[,rank=R]...;... | random:mtbf=... | FILE.json | none (a "
          "baseline)");
  sub->add_option("--time-budget", opt->time_budget, "Stop after this much wall time (e.g. 10m)");
  sub->add_option("--max-restarts", opt->max_restarts, "Relaunches allowed")->capture_default_str();
  add_enum_option(*sub, "--policy", opt->policy, kPolicyChoiceNames,
                  "Drain failing slots to spares or not; compare runs both with the same fault seed");
  sub->add_option("--spares", opt->spares, "Spare slots for --policy drain")->capture_default_str();
  sub->add_option("--drain-after", opt->drain_after, "Failures or straggler reports before a slot is drained")
      ->capture_default_str();
  sub->add_option("--heartbeat-timeout", opt->heartbeat_timeout,
                  "Supervisor: kill and count a hang when the event log is silent this long (in a checkpoint "
                  "save or restore: and rank 0's watchdog, which gives it its own time, has stopped)")
      ->capture_default_str();
  sub->add_flag("--preflight", opt->preflight,
                "Run `factorybench health` through the launcher before every (re)launch; drain failing ranks "
                "to spares");
  sub->add_option("--preflight-args", opt->preflight_args,
                  "Extra `health` options for --preflight (quoted, e.g. \"--gemm-floor 0.5\")");
  sub->add_option("--preflight-timeout", opt->preflight_timeout,
                  "Kill a pre-flight health job after this long")
      ->capture_default_str();
  return {sub,
          [opt, sub](Session& s) {
            opt->steps_given = sub->count("--steps") > 0;
            opt->drain_after_given = sub->count("--drain-after") > 0;
            opt->preflight_timeout_given = sub->count("--preflight-timeout") > 0;
            return run_resilience(*opt, s);
          },
          true};
}

}  // namespace fb::tools
