#include "resilience/supervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hang_watchdog.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/units.hpp"
#include "reports/report_json.hpp"
#include "resilience/event_log.hpp"
#include "resilience/event_log_follower.hpp"
#include "resilience/job_launch.hpp"
#include "workloads/health_check.hpp"

namespace fb::resilience {
namespace fs = std::filesystem;
namespace {

// The first sentence of a launcher's error output (Open MPI frames its messages in dashed lines), with a hint
// for the two complaints a first run meets most.
std::string launcher_complaint(const std::string& output) {
  std::istringstream in(output);
  std::string line, text;
  while (std::getline(in, line)) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line.find_first_not_of('-') == std::string::npos) {
      if (!text.empty()) break;  // the paragraph ended
      continue;
    }
    text += (text.empty() ? "" : " ") + line.substr(b);
    if (text.size() > 160 || text.back() == '.' || text.back() == ':') break;
  }
  if (text.empty()) return "no output from the launcher";
  if (text.back() == ':') text.pop_back();
  if (output.find("not enough slots") != std::string::npos)
    text += " (more ranks than cores: add --launcher-args \"--oversubscribe\")";
  else if (output.find("run as root") != std::string::npos)
    text += " (as root: export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)";
  return text;
}

// One pre-flight health job and its verdict.
struct PreflightOutcome {
  std::string verdict;  // pass | warn | fail | error
  std::vector<int> failed_ranks;
  nlohmann::json event;
  // Exit status 2, no report and factorybench's error line: health refused its options (a typo in
  // --preflight-args), as it will before every attempt. The reason; empty otherwise.
  std::string rejected;
};

PreflightOutcome run_preflight(const SupervisorOptions& o, int attempt, int round,
                               const std::vector<int>& slots) {
  const auto name =
      round > 1 ? fmt::format("preflight-{}-{}", attempt, round) : fmt::format("preflight-{}", attempt);
  const auto report_path = o.run_dir / (name + ".json");
  std::error_code ec;
  fs::remove(report_path, ec);
  fs::create_directories(o.run_dir / "checkpoints", ec);
  const auto cmd = preflight_command(o, attempt, round, report_path);
  // Test hook: FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT=S makes the rank placed on slot S fail the check (the
  // health command's FACTORYBENCH_TEST_READONLY_CKPT_RANK for that rank): a bad node that a drain removes.
  std::vector<std::pair<std::string, std::optional<std::string>>> env;
  // Test hook: FACTORYBENCH_TEST_PREFLIGHT_HANG_SLOT=S makes the rank on slot S never enter the check's
  // all-reduce, health's numbered call 9 (FACTORYBENCH_INJECT hang, for the health job alone): its watchdog
  // must end it.
  if (const char* hang = std::getenv("FACTORYBENCH_TEST_PREFLIGHT_HANG_SLOT"); hang && *hang) {
    const auto it = std::find(slots.begin(), slots.end(), std::atoi(hang));
    if (it != slots.end())
      env.emplace_back("FACTORYBENCH_INJECT", fmt::format("hang@rank={},call=9", it - slots.begin()));
  }
  if (const char* bad = std::getenv("FACTORYBENCH_TEST_PREFLIGHT_FAIL_SLOT"); bad && *bad) {
    const auto it = std::find(slots.begin(), slots.end(), std::atoi(bad));
    env.emplace_back(
        "FACTORYBENCH_TEST_READONLY_CKPT_RANK",
        it == slots.end() ? std::nullopt : std::optional<std::string>(std::to_string(it - slots.begin())));
  }
  const double t0 = wall_now();
  bool timed_out = false;
  const int status = run_child(cmd, o.run_dir / (name + ".log"), env, o.preflight_timeout_s, timed_out);
  const double t1 = wall_now();
  PreflightOutcome out;
  auto e = make_event(event::preflight, t1);
  e["attempt"] = attempt;
  e["round"] = round;
  e["t_start"] = t0;
  e["seconds"] = t1 - t0;
  // The health report's file name; null when the check wrote none (killed, or its options refused).
  e["report"] = fs::exists(report_path, ec) ? nlohmann::json(report_path.filename().string()) : nullptr;
  e["command"] = cmd;
  e["exit"] = timed_out ? std::string("timed out") : describe_status(status);
  auto failed = nlohmann::json::array();
  std::string error;
  if (timed_out) {
    error = fmt::format("the health job ran past {:.0f} s and was killed", o.preflight_timeout_s);
  } else {
    try {
      const auto report = reports::read_report(report_path);
      // The health job's own hang watchdog ended it: its report holds the diagnosis, not per-rank checks
      // (health_from_report would call the report malformed).
      for (const auto& r : report.results) {
        if (r.name == "hang" && r.status == reports::Status::failed)
          error = "the health check hung: " + r.error.value_or("(no diagnosis)");
        // Stopped by a signal from elsewhere (tools/interrupt_report.hpp), or killed with the report so far
        // in place ("unfinished"): its checks are not all there.
        if (r.name == "interrupted" && r.status == reports::Status::failed)
          error = "the health check was " + r.error.value_or("interrupted");
        if (r.name == "unfinished" && r.status == reports::Status::failed)
          error = "the health check " + r.error.value_or("did not finish");
      }
      if (error.empty()) {
        const auto ranks = workloads::health_from_report(report);
        if (static_cast<int>(ranks.size()) != o.ranks)
          error = fmt::format("the health report has {} rank(s), the job {}", ranks.size(), o.ranks);
        bool warned = false;
        for (const auto& r : ranks) {
          if (r.verdict == workloads::Verdict::warn) warned = true;
          if (r.verdict != workloads::Verdict::fail || r.rank < 0 || r.rank >= o.ranks) continue;
          out.failed_ranks.push_back(r.rank);
          failed.push_back({{"rank", r.rank},
                            {"slot", slots[static_cast<std::size_t>(r.rank)]},
                            {"host", r.host},
                            {"reason", r.reasons(workloads::Verdict::fail)}});
        }
        out.verdict = !out.failed_ranks.empty() ? "fail" : warned ? "warn" : "pass";
      }
    } catch (const std::exception& ex) {
      error = fmt::format("no health report ({}; {})", describe_status(status), ex.what());
      if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        const std::string log_tail = tail_of(o.run_dir / (name + ".log"), 4096);
        if (const auto at = log_tail.find("factorybench: error: "); at != std::string::npos) {
          out.rejected = log_tail.substr(at + 21);
          if (const auto nl = out.rejected.find('\n'); nl != std::string::npos) out.rejected.resize(nl);
          error = "health rejected its options: " + out.rejected;
        }
      }
    }
  }
  if (!error.empty()) {
    out.verdict = "error";
    e["error"] = error;
    if (out.rejected.empty())
      log::warn("supervisor: pre-flight before attempt {}: {}; launching anyway", attempt, error);
  }
  e["verdict"] = out.verdict;
  e["failed"] = failed;
  out.event = e;
  return out;
}

}  // namespace

void validate_supervisor_options(const SupervisorOptions& o) {
  if (o.ranks < 1) throw usage_error(fmt::format("invalid --ranks {}: must be at least 1", o.ranks));
  if (o.launcher == Launcher::none && o.ranks != 1)
    throw usage_error(fmt::format("--launcher none runs one rank; --ranks {} needs mpirun or srun", o.ranks));
  if (o.steps < 1) throw usage_error(fmt::format("invalid --steps {}: must be at least 1", o.steps));
  if (o.max_restarts < 0)
    throw usage_error(fmt::format("invalid --max-restarts {}: must not be negative", o.max_restarts));
  if (o.drain_after < 1)
    throw usage_error(fmt::format("invalid --drain-after {}: must be at least 1", o.drain_after));
  if (o.spares < 0) throw usage_error(fmt::format("invalid --spares {}: must not be negative", o.spares));
  if (o.time_budget_s < 0)
    throw usage_error(fmt::format("invalid --time-budget {} s: must not be negative", o.time_budget_s));
  // Below a second would kill every attempt before its first step (1ns: eleven relaunches of a healthy job)
  // and every pre-flight check, and call it a hang; the value is checked whether or not --preflight is on.
  if (!(o.heartbeat_timeout_s >= 1))
    throw usage_error(
        fmt::format("invalid --heartbeat-timeout {} s: must be at least 1 s", o.heartbeat_timeout_s));
  if (!(o.preflight_timeout_s >= 1))
    throw usage_error(
        fmt::format("invalid --preflight-timeout {} s: must be at least 1 s", o.preflight_timeout_s));
  if (o.time_budget_s > 0 && o.time_budget_s < 1)
    throw usage_error(fmt::format("invalid --time-budget {} s: must be at least 1 s", o.time_budget_s));
}

namespace {

// Whether the job is inside a checkpoint save or restore, from the events appended since the last scan: a
// save runs from ckpt_save_start to its ckpt_commit (an async save's background write included), or to a
// ckpt_save_end that failed; a restore from ckpt_restore_start to ckpt_restore_end.
class CheckpointActivity {
 public:
  explicit CheckpointActivity(std::uint64_t from) : offset_(from) {}
  void scan(const fs::path& log, std::uint64_t size) {
    if (size <= offset_) return;
    const int fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    const std::string chunk = appended_whole_lines(fd, offset_, size).value_or("");  // the rest: next time
    ::close(fd);
    if (chunk.empty()) return;
    offset_ += chunk.size();
    for (std::size_t at = 0; at < chunk.size();) {
      const auto eol = chunk.find('\n', at);
      const std::string_view line(chunk.data() + at, eol - at);
      const auto is = [&](std::string_view type) {
        return line.find(fmt::format("\"type\":\"{}\"", type)) != std::string_view::npos;
      };
      if (is(event::ckpt_save_start)) saving_ = true;
      if (is(event::ckpt_commit) || (is(event::ckpt_save_end) && line.find("\"ok\":false") != line.npos))
        saving_ = false;
      if (is(event::ckpt_restore_start)) restoring_ = true;
      if (is(event::ckpt_restore_end)) restoring_ = false;
      at = eol + 1;
    }
  }
  bool in_checkpoint() const { return saving_ || restoring_; }

 private:
  std::uint64_t offset_;
  bool saving_ = false, restoring_ = false;
};

// How one attempt ended, from the wait and from its part of the event log.
struct AttemptOutcome {
  fs::path out_path;             // the launcher's stdout and stderr
  std::uint64_t first_byte = 0;  // the log's size when the attempt began: its events follow
  int status = 0;                // wait status of the launcher (or the binary, --launcher none)
  double detected_at = 0;        // when the supervisor saw the end
  bool silent = false;           // killed: the log was silent for --heartbeat-timeout
  bool budget = false;           // killed or stopped for the time budget
  bool completed = false;        // every step done, exit 0
  bool started = false;          // some rank finished its start-up (init_done)
  bool failure_logged = false;   // the job logged its own fatal failure
  bool drain_requested = false;  // the supervisor wrote RUN_DIR/drain-request during this attempt
  bool drain_stop = false;       // the job checkpointed and stopped for it (attempt_end reason "drain")
  std::int64_t last_step = 0;
  int fault_rank = -1;  // the rank of this attempt's last fatal injected fault (the fault plan's), -1 if none
  std::map<std::string, int> fault_rank_by_kind;  // ... of each kind (a crash beside an SDC on another rank)
  // A fatal fault injected with no step after it: the job was stuck in it (a hang not yet past
  // --hang-timeout) when the attempt ended, if it ended for the time budget.
  std::string stuck_kind;
  double stuck_since = 0;
};

// The ledger of `r.events` (ending with job_end), and MTTF before and after the first drain for failures
// (the log split at the drain).
void account(SupervisorResult& r) {
  r.ledger = compute_ledger(r.events);
  const auto first = std::find_if(r.drains.begin(), r.drains.end(),
                                  [](const nlohmann::json& d) { return d.value("cause", "") == "failures"; });
  if (first == r.drains.end()) {
    // Drains for stragglers or a failed pre-flight only: no failure-caused drain splits the log, so there
    // is no MTTF on either side (null in the report, not 0 s).
    r.mttf_before_drain_s = r.mttf_after_drain_s = std::nan("");
    return;
  }
  const double t_drain = (*first)["t"].get<double>();
  std::vector<nlohmann::json> before, after;
  for (const auto& ev : r.events) (ev["t"].get<double>() < t_drain ? before : after).push_back(ev);
  before.push_back(make_event(event::job_end, t_drain));
  after.insert(after.begin(), make_event(event::job_start, t_drain));
  const auto lb = compute_ledger(before), la = compute_ledger(after);
  r.mttf_before_drain_s = lb.mttf_s;
  r.mttf_after_drain_s = la.mttf_s;
  r.failures_before_drain = lb.failures;
  r.failures_after_drain = la.failures;
}

// One supervised job: the attempts, the placement of ranks on slots, the strikes that drain a slot.
class Supervision {
 public:
  explicit Supervision(const SupervisorOptions& o)
      : o_(o), current_(o), log_path_(o.run_dir / "events.jsonl"), log_(log_path_), t_job_(wall_now()) {
    for (int r = 0; r < o.ranks; ++r) slots_.push_back(r);
    since_.assign(static_cast<std::size_t>(o.ranks), 0.0);
    next_spare_ = o.ranks;
    spares_left_ = o.spares;
  }

  SupervisorResult run() && {  // once, on a temporary: the result is moved out
    log_job_start();
    int failed_launches = 0;  // consecutive attempts that ended before any rank finished its start-up
    for (int attempt = 1;; ++attempt) {
      if (o_.preflight && !run_preflights(attempt)) break;
      if (o_.preflight && o_.on_progress) o_.on_progress();  // the pre-flight's events are in the log
      // Progress: a resilience run is minutes of attempts; say when each one starts (its ranks' own step
      // progress goes to the attempt's log).
      if (attempt > 1)
        log::info("resilience: attempt {} (restart {} of at most {}), {} elapsed", attempt, attempt - 1,
                  o_.max_restarts, format_duration(wall_now() - t_job_));
      const auto a = run_attempt(attempt);
      if (o_.on_progress) o_.on_progress();
      if (const auto why = rejected_options(a)) {
        result_.stop = StopReason::rejected_options;
        result_.stop_reason = *why;
        break;
      }
      const bool launch_failed =
          !a.completed && !a.started && !a.failure_logged && !a.budget && !a.silent && !a.drain_stop;
      failed_launches = launch_failed ? failed_launches + 1 : 0;
      if (!a.completed && !a.failure_logged && !a.budget && !a.drain_stop) log_failure(a, launch_failed);
      // The budget ended a job stuck in an injected fault its detector had not caught yet (a hang under
      // --hang-timeout): a failure all the same, or the stuck time reads as uptime and the MTTF as censored.
      if (a.budget && !a.failure_logged && !a.stuck_kind.empty()) log_stuck_at_budget(a);
      strike_failed_rank(a);
      // Once may be a node's hiccup; twice in a row is the set-up, and relaunching cannot fix it.
      if (failed_launches >= 2) {
        result_.stop = StopReason::launch_failed;
        result_.stop_reason = fmt::format(
            "attempts {} and {} failed before any rank started ({}): {}; see {}", attempt - 1, attempt,
            describe_status(a.status), launcher_complaint(tail_of(a.out_path, 8192)), a.out_path.string());
        break;
      }
      if (a.completed) {
        result_.completed = true;
        result_.stop = StopReason::completed;
        result_.stop_reason = "completed";
        break;
      }
      if (a.budget || budget_spent()) {
        result_.stop = StopReason::time_budget;
        result_.stop_reason = "time budget spent";
        break;
      }
      if (attempt - 1 >= o_.max_restarts) {
        result_.stop = StopReason::restarts_exhausted;
        result_.stop_reason = "restarts exhausted";
        break;
      }
      if (o_.policy == DrainPolicy::drain) drain_struck_slots();
      auto e = make_event(event::relaunch);
      e["next_attempt"] = attempt + 1;
      log_.append(e, Durability::fsync);
    }
    return finish();
  }

 private:
  void log_job_start() {
    auto e = make_event(event::job_start, t_job_);
    e["ranks"] = o_.ranks;
    if (until_budget())
      e["steps"] = nullptr;
    else
      e["steps"] = o_.steps;
    e["policy"] = enum_name(kDrainPolicyNames, o_.policy);
    e["spares"] = o_.spares;
    e["faults"] = o_.faults;
    e["launcher"] = enum_name(kLauncherNames, o_.launcher);
    if (o_.time_budget_s > 0) e["time_budget_s"] = o_.time_budget_s;
    e["preflight"] = o_.preflight;
    log_.append(e, Durability::fsync);
  }

  bool budget_spent() const { return o_.time_budget_s > 0 && wall_now() - t_job_ >= o_.time_budget_s; }

  // Moves rank r to the next spare slot and logs the drain.
  void drain_rank(int r, const std::string& cause, const std::string& reason, const std::string& host) {
    const int slot = slots_[static_cast<std::size_t>(r)];
    auto e = make_event(event::drain);
    e["rank"] = r;
    e["cause"] = cause;  // failures (--drain-after) | preflight
    e["from_slot"] = slot;
    e["to_slot"] = next_spare_;
    e["strikes"] = strikes_[slot];
    e["reason"] = reason;
    auto& excluded = current_.exclude_hosts;
    if (!host.empty() && o_.launcher == Launcher::srun &&
        std::find(excluded.begin(), excluded.end(), host) == excluded.end()) {
      e["host"] = host;
      excluded.push_back(host);  // srun --exclude from the next attempt on
    }
    slots_[static_cast<std::size_t>(r)] = next_spare_++;
    since_[static_cast<std::size_t>(r)] = e["t"].get<double>() - t_job_;
    --spares_left_;
    log_.append(e, Durability::fsync);
    result_.drains.push_back(e);
  }

  // Health checks on the placement this attempt would get; failing ranks go to spares while they last, and
  // the new placement is checked again. False when the check refused its options: the job stops unlaunched
  // (a pre-flight silently skipped before every attempt is no pre-flight).
  bool run_preflights(int attempt) {
    for (int round = 1;; ++round) {
      auto pf = run_preflight(current_, attempt, round, slots_);
      ++result_.preflights;
      if (!pf.rejected.empty()) {
        pf.event["action"] = "stop";
        log_.append(pf.event, Durability::fsync);
        result_.stop = StopReason::rejected_options;
        result_.stop_reason = "the pre-flight health check rejected its options: " + pf.rejected;
        return false;
      }
      if (pf.verdict == "fail") ++result_.preflight_failures;
      const bool drain = !pf.failed_ranks.empty() && spares_left_ >= static_cast<int>(pf.failed_ranks.size());
      pf.event["action"] = pf.failed_ranks.empty() ? "none"
                           : drain                 ? "drain"
                                                   : "none: not enough spares, launching anyway";
      log_.append(pf.event, Durability::fsync);
      if (!drain) {
        if (!pf.failed_ranks.empty())
          log::warn("supervisor: pre-flight failed on {} rank(s) and {} spare(s) are left; launching anyway",
                    pf.failed_ranks.size(), spares_left_);
        return true;
      }
      for (const auto& f : pf.event["failed"])
        drain_rank(f["rank"].get<int>(), "preflight",
                   fmt::format("pre-flight health check failed: {}", f["reason"].get<std::string>()),
                   f["host"].get<std::string>());
    }
  }

  // Launches attempt `attempt`, watches it until it ends (or kills it: silent log, time budget), and reads
  // its events.
  AttemptOutcome run_attempt(int attempt) {
    write_file_atomic(o_.run_dir / "placement.json",
                      nlohmann::json{{"slots", slots_}, {"since_s", since_}}.dump() + "\n");
    AttemptOutcome a;
    a.first_byte = log_size(log_path_);
    a.out_path = o_.run_dir / fmt::format("attempt-{}.log", attempt);
    const auto cmd = launch_command(current_, attempt);
    {
      auto e = make_event(event::attempt_start);
      e["attempt"] = attempt;
      e["slots"] = slots_;
      e["command"] = cmd;
      log_.append(e, Durability::fsync);
    }
    EnvChanges env{{"FB_SUPERVISED", "1"},
                   {"FB_ATTEMPT", std::to_string(attempt)},
                   {"FB_SPARES", std::to_string(o_.spares)}};
    // A drain may be asked for mid-attempt (a straggler reaching --drain-after): the job watches for it.
    std::error_code ec;
    fs::remove(drain_request_path(), ec);
    drain_scan_offset_ = log_size(log_path_);
    attempt_straggles_.clear();
    if (o_.policy == DrainPolicy::drain && spares_left_ > 0) env.emplace_back("FB_DRAIN_WATCH", "1");
    // The job stops by itself at the first step boundary past the deadline (rank 0's clock decides).
    if (o_.time_budget_s > 0)
      env.emplace_back("FB_DEADLINE", fmt::format("{:.6f}", t_job_ + o_.time_budget_s));
    watch(spawn(cmd, a.out_path, env), attempt, a);
    read_attempt_events(a);
    return a;
  }

  // Waits for the attempt's process group to end, or kills it when the job is silent or the budget (and
  // its grace) is spent; leaves nothing of the group behind. Silent: the event log did not move for
  // --heartbeat-timeout, except inside a checkpoint save or restore (the log is quiet while a shard is
  // written or read) while rank 0's watchdog still pulses: that watchdog (train's,
  // resilience/failure_detection.cpp) refreshes calls/rank-0.state twice a second and gives a save and a
  // restore their own allowances, so a long healthy save is not a hang here either (every attempt held 4 s
  // in a save was killed under a 2 s heartbeat). A frozen job stops the pulse too.
  void watch(pid_t child, int attempt, AttemptOutcome& a) {
    std::uint64_t seen = log_size(log_path_);
    // This attempt's events follow: the progress line shows its own steps, not the last one of the attempt
    // before it (a relaunch printed "step 29/1500, attempt 2", then "step 8/1500, attempt 2").
    const std::uint64_t attempt_from = seen;
    double last_beat = wall_now(), last_pulse = last_beat;
    const auto pulse_path = call_state_file(o_.run_dir / "calls", 0);
    const auto pulse = [&pulse_path] {
      std::error_code ec;
      const auto t = fs::last_write_time(pulse_path, ec);
      return ec ? std::optional<fs::file_time_type>() : std::optional<fs::file_time_type>(t);
    };
    auto pulse_seen = pulse();  // an earlier attempt's file, unchanged, is no pulse
    CheckpointActivity phase(seen);
    double last_save = wall_now();
    while (true) {
      if (::waitpid(child, &a.status, WNOHANG) == child) {
        a.detected_at = wall_now();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto size = log_size(log_path_);
      const double now = wall_now();
      if (size != seen) seen = size, last_beat = now, phase.scan(log_path_, size);
      if (const auto p = pulse(); p && p != pulse_seen) pulse_seen = p, last_pulse = now;
      // The report so far follows the job each second, so a SIGKILL of the supervisor loses about a second
      // of its accounting (it was saved with each progress line, every 5 s). A save reads only what the event
      // log gained, and is skipped while writing would take over a twentieth of the time (Session).
      if (o_.on_progress && now - last_save >= 1.0) {
        o_.on_progress();
        last_save = now;
      }
      if (progress_.due()) {
        // From the byte before the attempt's first line (its newline), so that line is read whole.
        const std::uint64_t now_size = log_size(log_path_);
        const std::uint64_t since = now_size > attempt_from ? now_size - attempt_from : 0;
        const auto tail = static_cast<std::size_t>(std::min<std::uint64_t>(since + 1, kStepTailBytes));
        if (const auto step = since == 0 ? std::nullopt : last_step_in_log(log_path_, tail)) {
          // With both --steps and --time-budget the job ends at whichever comes first: the share done is
          // the larger of the two (a budgeted run of 100000 steps was told it had hours left).
          const double by_time = o_.time_budget_s > 0 ? (now - t_job_) / o_.time_budget_s : 0;
          if (until_budget())
            progress_.update(by_time, fmt::format("step {}, attempt {}, of a {:.0f} s time budget", *step,
                                                  attempt, o_.time_budget_s));
          else
            progress_.update(
                std::max(static_cast<double>(*step) / o_.steps, by_time),
                fmt::format("step {}/{}, attempt {}{}", *step, o_.steps, attempt,
                            o_.time_budget_s > 0 ? fmt::format(", {:.0f} s time budget", o_.time_budget_s)
                                                 : std::string()));
        }
      }
      if (size != drain_scan_offset_ && !a.drain_requested) request_drain_of_stragglers(a);
      if (now - last_beat > o_.heartbeat_timeout_s &&
          !(phase.in_checkpoint() && now - last_pulse <= o_.heartbeat_timeout_s))
        a.silent = true;
      if (o_.time_budget_s > 0 && now - t_job_ > o_.time_budget_s + kTimeBudgetGraceS) a.budget = true;
      const bool removed = log_.removed();  // the run dir gone: stopped as a silent job is, reported below
      if (a.silent || a.budget || removed) {
        a.detected_at = now;
        if (o_.launcher == Launcher::srun) {
          stop_srun_attempt(child, a.status, false, srun_step_name(o_, attempt));
        } else {
          ::kill(-child, SIGKILL);
          ::waitpid(child, &a.status, 0);
        }
        break;
      }
    }
    if (o_.launcher == Launcher::srun && !a.silent && !a.budget && !log_.removed())
      stop_srun_attempt(child, a.status, true, srun_step_name(o_, attempt));
    ::kill(-child,
           SIGKILL);  // whatever is left of the attempt's process group (ranks, the launcher's helpers)
    // The run dir removed under the job (seen here, or by rank 0, which then ended the attempt): every later
    // event, and so the accounting, would be lost, and a relaunch would resume from nothing.
    if (log_.removed()) {
      ::waitpid(child, &a.status, 0);
      throw runtime_error(fmt::format(
          "--run-dir {}: its event log is no longer there (the run dir removed, moved or replaced during "
          "the run?); attempt {} was stopped, and no relaunch follows without the event log the accounting "
          "reads",
          o_.run_dir.string(), attempt));
    }
  }

  fs::path drain_request_path() const { return o_.run_dir / "drain-request"; }

  // --policy drain with a spare left: the attempt's new straggler reports (read from where the last scan
  // stopped) with the slot's earlier strikes; a slot at --drain-after gets the job asked to checkpoint and
  // stop at its next step boundary, so the drain happens now rather than at a relaunch that may never come.
  void request_drain_of_stragglers(AttemptOutcome& a) {
    if (o_.policy != DrainPolicy::drain || spares_left_ == 0) return;
    std::ifstream in(log_path_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(drain_scan_offset_));
    std::string line;
    std::uint64_t consumed = drain_scan_offset_;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written: read it next time
      consumed += line.size() + 1;
      if (line.find("\"straggler_detected\"") == std::string::npos) continue;
      const auto e = nlohmann::json::parse(line, nullptr, false);
      if (e.is_discarded() || e.value("type", "") != event::straggler_detected) continue;
      const int r = e.value("rank", -1);
      if (r >= 0 && r < o_.ranks) ++attempt_straggles_[slots_[static_cast<std::size_t>(r)]];
    }
    drain_scan_offset_ = consumed;
    for (int r = 0; r < o_.ranks; ++r) {
      const int slot = slots_[static_cast<std::size_t>(r)];
      const int strikes = strikes_[slot] + attempt_straggles_[slot];
      if (strikes < o_.drain_after) continue;
      write_file_atomic(drain_request_path(),
                        nlohmann::json{{"slot", slot}, {"rank", r}, {"strikes", strikes}}.dump() + "\n");
      a.drain_requested = true;
      log::info(
          "resilience: slot {} (rank {}) failed or straggled {} time(s) (--drain-after {}): asking the job "
          "to checkpoint and stop at its next step for a drain",
          slot, r, strikes, o_.drain_after);
      return;
    }
  }

  void read_attempt_events(AttemptOutcome& a) {
    const auto events = read_event_log_from(log_path_, a.first_byte).events;
    bool completed = false, budget_end = false;
    for (const auto& e : events) {
      if (e["type"] == event::init_done) a.started = true;
      if (e["type"] == event::step)
        a.last_step = std::max<std::int64_t>(a.last_step, e["step"].get<std::int64_t>());
      // The step the attempt reached: a relaunch that resumed from the final checkpoint runs no step.
      if (e["type"] == event::attempt_end && e.contains("last_step") && e["last_step"].is_number_integer())
        a.last_step = std::max<std::int64_t>(a.last_step, e["last_step"].get<std::int64_t>());
      if (e["type"] == event::attempt_end && e.value("reason", "") == "completed") completed = true;
      if (e["type"] == event::attempt_end && e.value("reason", "") == "time budget") budget_end = true;
      if (e["type"] == event::attempt_end && e.value("reason", "") == "drain") a.drain_stop = true;
      if (e["type"] == event::failure_detected && e.value("fatal", true)) a.failure_logged = true;
      if (e["type"] == event::fault_injected && is_fatal_fault_kind(e.value("kind", ""))) {
        a.fault_rank = e.value("rank", -1);
        a.fault_rank_by_kind[e.value("kind", "")] = a.fault_rank;
        a.stuck_kind = e.value("kind", "");
        a.stuck_since = e.value("t", 0.0);
      }
      if (e["type"] == event::step || e["type"] == event::failure_detected) a.stuck_kind.clear();
      if (e["type"] == event::straggler_detected) {
        const int r = e.value("rank", -1);
        if (r >= 0 && r < o_.ranks) {
          ++strikes_[slots_[static_cast<std::size_t>(r)]];
          ++straggles_[slots_[static_cast<std::size_t>(r)]];
        }
      }
    }
    // A job that stopped for the deadline after its last step did finish.
    a.completed = (completed || budget_end) && a.last_step >= o_.steps && WIFEXITED(a.status) &&
                  WEXITSTATUS(a.status) == 0 && !a.budget;
    if (budget_end && !a.completed) a.budget = true;
  }

  // Exit status 2 before any step: the job rejected its options (e.g. --state-bytes beyond the memory);
  // every relaunch would do the same. The reason, or nothing.
  static std::optional<std::string> rejected_options(const AttemptOutcome& a) {
    if (a.completed || a.failure_logged || a.budget || a.silent || a.last_step != 0 || !WIFEXITED(a.status) ||
        WEXITSTATUS(a.status) != 2)
      return std::nullopt;
    std::string why = tail_of(a.out_path, 4096);
    if (const auto at = why.find("error: "); at != std::string::npos) why = why.substr(at + 7);
    if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    return fmt::format("the training job rejected its options: {}", why);
  }

  // The failure the job could not log itself: a launch that failed (no rank started: no slots, a bad
  // launcher option, refused to run as root), a crash (the exit seen) or a hang (the log silent). The rank:
  // the launcher's word, else the fault plan's rank of the fault that fired, else the only rank.
  void log_failure(const AttemptOutcome& a, bool launch_failed) {
    const std::string out = tail_of(a.out_path, 64 * 1024);
    auto e = make_event(event::failure_detected, a.detected_at);
    if (launch_failed) {
      e["kind"] = "launch";
      e["rank"] = -1;
      e["how"] = fmt::format("supervisor: the launch failed ({}): {}", describe_status(a.status),
                             launcher_complaint(out));
      log_.append(e, Durability::fsync);
      return;
    }
    const std::string kind = a.silent ? "hang" : "crash";
    int rank = failed_rank_from_launcher_output(out);
    const bool named = rank >= 0;
    if (rank < 0) {
      const auto same_kind = a.fault_rank_by_kind.find(kind);
      rank = same_kind != a.fault_rank_by_kind.end() ? same_kind->second : a.fault_rank;
    }
    if (rank < 0 && o_.ranks == 1) rank = 0;
    e["kind"] = kind;
    e["rank"] = rank;
    e["how"] = a.silent ? fmt::format("supervisor: event log silent for {:.0f} s; job killed",
                                      o_.heartbeat_timeout_s)
                        : fmt::format("supervisor: job ended ({}){}", describe_status(a.status),
                                      named ? fmt::format("; launcher: rank {} died", rank) : "");
    log_.append(e, Durability::fsync);
  }

  void log_stuck_at_budget(const AttemptOutcome& a) {
    auto e = make_event(event::failure_detected, a.detected_at);
    e["kind"] = a.stuck_kind;
    e["rank"] = a.fault_rank;
    e["how"] = fmt::format(
        "supervisor: the time budget ended the job, stuck {:.1f} s since the injected {} (no step after it; "
        "not yet detected within its timeout)",
        a.detected_at - a.stuck_since, a.stuck_kind);
    log_.append(e, Durability::fsync);
  }

  // The rank blamed by this attempt's fatal failure gets a strike (and, under srun, its node is noted).
  void strike_failed_rank(const AttemptOutcome& a) {
    const auto ev = read_event_log_from(log_path_, a.first_byte).events;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (ev[i]["type"] != event::failure_detected || !ev[i].value("fatal", true)) continue;
      const int r = ev[i].value("rank", -1);
      if (r < 0 || r >= o_.ranks) return;
      const int slot = slots_[static_cast<std::size_t>(r)];
      ++strikes_[slot];
      if (o_.launcher == Launcher::srun) {
        std::string host = ev[i].value("host", "");
        if (host.empty()) host = failed_host_from_launcher_output(tail_of(a.out_path, 64 * 1024));
        if (!host.empty()) slot_host_[slot] = host;
      }
      return;
    }
  }

  void drain_struck_slots() {
    for (int r = 0; r < o_.ranks; ++r) {
      const int slot = slots_[static_cast<std::size_t>(r)];
      if (strikes_[slot] < o_.drain_after || spares_left_ == 0) continue;
      const auto h = slot_host_.find(slot);
      drain_rank(r, straggles_[slot] == strikes_[slot] ? "straggler" : "failures",
                 fmt::format("slot {} failed or straggled {} time(s) (--drain-after {})", slot,
                             strikes_[slot], o_.drain_after),
                 h != slot_host_.end() ? h->second : std::string());
    }
  }

  // Logs the job's end and accounts it; MTTF before and after the first drain for failures (the log split
  // at the drain).
  SupervisorResult finish() {
    // Drains happen between attempts: a slot that reached its strikes in the last attempt (a straggler seen
    // at the job's last steps, a failure with the restarts exhausted) is still in the job. Said, rather than
    // left for the reader to infer.
    std::error_code ec;
    fs::remove(drain_request_path(), ec);
    if (o_.policy == DrainPolicy::drain)
      for (int r = 0; r < o_.ranks; ++r) {
        const int slot = slots_[static_cast<std::size_t>(r)];
        if (strikes_[slot] < o_.drain_after) continue;
        log::warn(
            "resilience: slot {} (rank {}) failed or straggled {} time(s) (--drain-after {}) but was not "
            "drained: {}",
            slot, r, strikes_[slot], o_.drain_after,
            spares_left_ == 0 ? "no spare slot was left"
                              : "the job ended before it could stop for the drain");
      }
    auto end = make_event(event::job_end);
    end["reason"] = result_.stop_reason;
    end["completed"] = result_.completed;
    log_.append(end, Durability::fsync);
    // Moved, not copied: a job of a million steps holds a million events (about 1 KB each parsed).
    auto contents = read_event_log(log_path_);
    result_.events = std::move(contents.events);
    account(result_);
    result_.ledger.torn_lines = contents.torn_lines;
    return std::move(result_);
  }

  const SupervisorOptions& o_;
  SupervisorOptions current_;  // srun: exclude_hosts grows with the drained nodes
  fs::path log_path_;
  EventLog log_;
  double t_job_;
  // Steps done over the whole job (restarts included), from the log's last step event: between relaunches a
  // run of hours would otherwise print nothing (its ranks' own progress goes to the attempt's log).
  bool until_budget() const { return o_.time_budget_s > 0 && o_.steps >= kStepsUntilBudget; }
  ProgressMeter progress_{"resilience", 1.0, 3, 5};  // the share of the job done (steps or time budget)
  std::vector<int> slots_;                           // rank → slot
  std::vector<double> since_;                        // job time at which each rank's slot entered service
  int next_spare_ = 0, spares_left_ = 0;
  std::map<int, int> strikes_;            // slot → failures + straggler reports
  std::map<int, int> straggles_;          // slot → straggler reports alone (a drain's cause)
  std::uint64_t drain_scan_offset_ = 0;   // how far request_drain_of_stragglers read the event log
  std::map<int, int> attempt_straggles_;  // slot → this attempt's straggler reports read so far
  std::map<int, std::string> slot_host_;  // srun: slot → node it last failed on, excluded when drained
  SupervisorResult result_;
};

// The run directory exists before the log is opened in it.
const SupervisorOptions& with_run_dir(const SupervisorOptions& o) {
  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  if (ec)
    throw runtime_error(fmt::format("cannot create --run-dir {}: {}", o.run_dir.string(), ec.message()));
  return o;
}

}  // namespace

SupervisorResult job_so_far(std::vector<nlohmann::json> events, double now, const std::string& reason) {
  SupervisorResult r;
  r.stop = StopReason::unfinished;
  int attempt = 0;
  std::int64_t step = 0;
  for (const auto& e : events) {
    const auto type = e.value("type", "");
    if (type == event::attempt_start) attempt = e.value("attempt", attempt);
    if (type == event::step) step = std::max<std::int64_t>(step, e.value("step", std::int64_t{0}));
    if (type == event::drain) r.drains.push_back(e);
    if (type == event::preflight) {
      ++r.preflights;
      if (e.value("verdict", "") == "fail") ++r.preflight_failures;
    }
  }
  // Where it was: a reader of the report learns how far the job got without reading its events.
  r.stop_reason =
      attempt > 0 ? fmt::format("{} (attempt {}, step {} reached)", reason, attempt, step) : reason;
  auto end = make_event(event::job_end, now);
  end["reason"] = r.stop_reason;
  end["completed"] = false;
  events.push_back(std::move(end));
  r.events = std::move(events);
  account(r);
  return r;
}

SupervisorResult run_supervisor(const SupervisorOptions& o) {
  validate_supervisor_options(o);
  return Supervision(with_run_dir(o)).run();
}

}  // namespace fb::resilience
