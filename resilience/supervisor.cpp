#include "resilience/supervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "reports/report_json.hpp"
#include "resilience/event_log.hpp"
#include "resilience/launch_environment.hpp"
#include "workloads/health_check.hpp"

namespace fb::resilience {
namespace fs = std::filesystem;
namespace {

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("factorybench") : p.string();
}

std::uint64_t log_size(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

std::string tail_of(const fs::path& p, std::size_t n) {
  try {
    auto s = read_text_file(p);
    return s.size() > n ? s.substr(s.size() - n) : s;
  } catch (...) {
    return {};
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "stopped";
}

// Runs a command without a shell and returns its stdout ("" when it cannot run).
std::string run_and_read(const std::vector<std::string>& cmd) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {};
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

// srun's tasks run under slurmstepd, outside srun's process group: killing srun alone leaves them running.
// SIGTERM makes srun cancel its step; a step still listed after srun is gone is cancelled by id.
void stop_srun_attempt(pid_t child, int& status, bool reaped, const std::string& step_name) {
  if (!reaped) {
    ::kill(-child, SIGTERM);
    // srun waits up to KillWait (30 s by default) for the step's tasks before it exits.
    for (int i = 0; i < 400; ++i) {
      if (::waitpid(child, &status, WNOHANG) == child) {
        reaped = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!reaped) {
      ::kill(-child, SIGKILL);
      ::waitpid(child, &status, 0);
    }
  }
  for (const auto& id : slurm_steps_named(run_and_read({"squeue", "-h", "-s", "-o", "%i %j"}), step_name)) {
    log::warn("supervisor: job step {} outlived srun; scancel {}", id, id);
    run_and_read({"scancel", id});
  }
}

// The launcher and the binary: `mpirun -np N [args] factorybench` or `srun -n N ... [args] factorybench`.
std::vector<std::string> launcher_prefix(const SupervisorOptions& o, const std::string& step_name) {
  std::vector<std::string> cmd;
  if (o.launcher == "mpirun") {
    cmd = {"mpirun", "-np", std::to_string(o.ranks)};
  } else if (o.launcher == "srun") {
    // --kill-on-bad-exit: one dead rank ends the step instead of leaving the others blocked in a collective.
    cmd = {"srun", "-n", std::to_string(o.ranks), "--kill-on-bad-exit=1", "--job-name=" + step_name};
    if (!o.exclude_hosts.empty())
      cmd.push_back("--exclude=" + fmt::format("{}", fmt::join(o.exclude_hosts, ",")));
  }
  for (const auto& a : o.launcher_args) cmd.push_back(a);
  cmd.push_back(o.binary.empty() ? self_exe() : o.binary);
  return cmd;
}

// Runs `cmd` in a process group of its own, stdout and stderr to `out_path`, with `env` set (a null value
// unsets); the whole group is killed after `timeout_s`. Returns the wait status.
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

using EnvChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Starts `cmd` in a process group of its own, stdout and stderr to `out_path`. Its environment is ours
// without an enclosing MPI job's wiring (resilience/launch_environment.hpp: the supervisor may itself be a
// rank of a `suite` job) plus `changes` (a null value unsets). Everything is prepared before fork(): the
// child only redirects and execs.
pid_t spawn(const std::vector<std::string>& cmd, const fs::path& out_path, const EnvChanges& changes) {
  std::vector<std::string> env = launcher_environment(environ);
  for (const auto& [name, value] : changes) {
    const std::string prefix = name + "=";  // clang 14 (the fuzz build) cannot capture a structured binding
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
    if (value) env.push_back(name + "=" + *value);
  }
  std::vector<char*> argv, envp;
  for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw runtime_error("fork failed");
  if (child == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::close(fd);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    const char* msg = "cannot run the launcher: ";
    [[maybe_unused]] auto n = ::write(2, msg, std::strlen(msg));
    n = ::write(2, argv[0], std::strlen(argv[0]));
    n = ::write(2, "\n", 1);
    std::_Exit(127);
  }
  ::setpgid(child, child);
  return child;
}

int run_child(const std::vector<std::string>& cmd, const fs::path& out_path, const EnvChanges& env,
              double timeout_s, bool& timed_out) {
  timed_out = false;
  const pid_t child = spawn(cmd, out_path, env);
  int status = 0;
  const double t0 = wall_now();
  while (::waitpid(child, &status, WNOHANG) != child) {
    if (wall_now() - t0 > timeout_s) {
      timed_out = true;
      ::kill(-child, SIGKILL);
      ::waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-child, SIGKILL);  // helpers the launcher left behind
  return status;
}

}  // namespace

std::string failed_host_from_launcher_output(const std::string& text) {
  static const std::regex srun(R"(srun: error: (\S+): task \d+: (Killed|Aborted|Exited))");
  std::smatch m;
  return std::regex_search(text, m, srun) ? m[1].str() : std::string();
}

std::string srun_step_name(const SupervisorOptions& o, int attempt) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a of the run directory
  for (unsigned char c : fs::absolute(o.run_dir).string()) hash = (hash ^ c) * 1099511628211ull;
  return fmt::format("fb-train-{:08x}-{}", static_cast<std::uint32_t>(hash), attempt);
}

std::vector<std::string> slurm_steps_named(const std::string& squeue_output, const std::string& name) {
  std::vector<std::string> ids;
  std::istringstream lines(squeue_output);
  for (std::string id, step; lines >> id >> step;)
    if (step == name) ids.push_back(id);
  return ids;
}

int failed_rank_from_launcher_output(const std::string& text) {
  static const std::regex ompi(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal)");
  static const std::regex slurm(R"(task (\d+): (Killed|Aborted|Exited))");
  std::smatch m;
  if (std::regex_search(text, m, ompi) || std::regex_search(text, m, slurm)) return std::stoi(m[1].str());
  return -1;
}

std::vector<std::string> launch_command(const SupervisorOptions& o, int attempt) {
  auto cmd = launcher_prefix(o, srun_step_name(o, attempt));
  cmd.push_back("train");
  for (const auto& a : o.train_args) cmd.push_back(a);
  cmd.insert(cmd.end(), {"--run-dir", o.run_dir.string(), "--steps", std::to_string(o.steps), "--resume",
                         "--warmup-steps", "0"});
  if (!o.faults.empty()) cmd.insert(cmd.end(), {"--faults", o.faults});
  return cmd;
}

std::vector<std::string> preflight_command(const SupervisorOptions& o, int attempt, int round,
                                           const fs::path& report) {
  auto cmd = launcher_prefix(o, fmt::format("{}-preflight-{}", srun_step_name(o, attempt), round));
  cmd.push_back("health");
  for (const auto& a : o.preflight_args) cmd.push_back(a);
  // The checkpoint directory the job writes to (its write bandwidth and writability are checked).
  if (std::find(o.preflight_args.begin(), o.preflight_args.end(), "--checkpoint-dir") ==
      o.preflight_args.end())
    cmd.insert(cmd.end(), {"--checkpoint-dir", (o.run_dir / "checkpoints").string()});
  cmd.insert(cmd.end(), {"--output", report.string()});
  return cmd;
}

namespace {

// One pre-flight health job and its verdict.
struct PreflightOutcome {
  std::string verdict;  // pass | warn | fail | error
  std::vector<int> failed_ranks;
  nlohmann::json event;
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
  e["report"] = report_path.filename().string();
  e["command"] = cmd;
  e["exit"] = timed_out ? std::string("timed out") : describe_status(status);
  auto failed = nlohmann::json::array();
  std::string error;
  if (timed_out) {
    error = fmt::format("the health job ran past {:.0f} s and was killed", o.preflight_timeout_s);
  } else {
    try {
      const auto ranks = workloads::health_from_report(reports::read_report(report_path));
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
    } catch (const std::exception& ex) {
      error = fmt::format("no health report ({}; {})", describe_status(status), ex.what());
    }
  }
  if (!error.empty()) {
    out.verdict = "error";
    e["error"] = error;
    log::warn("supervisor: pre-flight before attempt {}: {}; launching anyway", attempt, error);
  }
  e["verdict"] = out.verdict;
  e["failed"] = failed;
  out.event = e;
  return out;
}

}  // namespace

SupervisorResult run_supervisor(const SupervisorOptions& o) {
  if (o.ranks < 1) throw usage_error(fmt::format("invalid --ranks {}: must be at least 1", o.ranks));
  if (o.launcher != "mpirun" && o.launcher != "srun" && o.launcher != "none")
    throw usage_error(fmt::format("invalid --launcher '{}': expected mpirun, srun or none", o.launcher));
  if (o.launcher == "none" && o.ranks != 1)
    throw usage_error(fmt::format("--launcher none runs one rank; --ranks {} needs mpirun or srun", o.ranks));
  if (o.steps < 1) throw usage_error(fmt::format("invalid --steps {}: must be at least 1", o.steps));
  if (o.max_restarts < 0)
    throw usage_error(fmt::format("invalid --max-restarts {}: must not be negative", o.max_restarts));
  if (o.policy != "none" && o.policy != "drain")
    throw usage_error(fmt::format("invalid --policy '{}': expected none, drain or compare", o.policy));
  if (o.drain_after < 1)
    throw usage_error(fmt::format("invalid --drain-after {}: must be at least 1", o.drain_after));
  if (o.spares < 0) throw usage_error(fmt::format("invalid --spares {}: must not be negative", o.spares));
  if (o.time_budget_s < 0)
    throw usage_error(fmt::format("invalid --time-budget {} s: must not be negative", o.time_budget_s));

  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  if (ec)
    throw runtime_error(fmt::format("cannot create --run-dir {}: {}", o.run_dir.string(), ec.message()));
  const auto log_path = o.run_dir / "events.jsonl";
  EventLog log(log_path);
  const double t_job = wall_now();
  {
    auto e = make_event(event::job_start, t_job);
    e["ranks"] = o.ranks;
    e["steps"] = o.steps;
    e["policy"] = o.policy;
    e["spares"] = o.spares;
    e["faults"] = o.faults;
    e["launcher"] = o.launcher;
    if (o.time_budget_s > 0) e["time_budget_s"] = o.time_budget_s;
    e["preflight"] = o.preflight;
    log.append(e, Durability::fsync);
  }
  std::vector<int> slots(static_cast<std::size_t>(o.ranks));
  for (int r = 0; r < o.ranks; ++r) slots[static_cast<std::size_t>(r)] = r;
  // Job time at which each rank's slot entered service (a spare's faults from before then do not apply).
  std::vector<double> since(static_cast<std::size_t>(o.ranks), 0.0);
  int next_spare = o.ranks, spares_left = o.spares;
  std::map<int, int> strikes;  // slot → failures + straggler reports
  std::map<int, std::string>
      slot_host;                  // srun: slot → node it last failed on, excluded when the slot is drained
  SupervisorOptions current = o;  // srun: exclude_hosts grows with the drained nodes
  SupervisorResult result;
  const auto budget_spent = [&] { return o.time_budget_s > 0 && wall_now() - t_job >= o.time_budget_s; };
  // Moves rank r to the next spare slot; returns the drain event (not yet logged).
  const auto drain_rank = [&](int r, const std::string& cause, const std::string& reason,
                              const std::string& host) {
    const int slot = slots[static_cast<std::size_t>(r)];
    auto e = make_event(event::drain);
    e["rank"] = r;
    e["cause"] = cause;  // failures (--drain-after) | preflight
    e["from_slot"] = slot;
    e["to_slot"] = next_spare;
    e["strikes"] = strikes[slot];
    e["reason"] = reason;
    if (!host.empty() && o.launcher == "srun" &&
        std::find(current.exclude_hosts.begin(), current.exclude_hosts.end(), host) ==
            current.exclude_hosts.end()) {
      e["host"] = host;
      current.exclude_hosts.push_back(host);  // srun --exclude from the next attempt on
    }
    slots[static_cast<std::size_t>(r)] = next_spare++;
    since[static_cast<std::size_t>(r)] = e["t"].get<double>() - t_job;
    --spares_left;
    log.append(e, Durability::fsync);
    result.drains.push_back(e);
  };
  int attempt = 0;
  int failed_launches = 0;  // consecutive attempts that ended before any rank finished its start-up
  while (true) {
    ++attempt;
    if (o.preflight) {
      // Health checks on the placement this attempt would get; failing ranks go to spares while they last,
      // and the new placement is checked again.
      for (int round = 1;; ++round) {
        auto pf = run_preflight(current, attempt, round, slots);
        ++result.preflights;
        if (pf.verdict == "fail") ++result.preflight_failures;
        const bool drain =
            !pf.failed_ranks.empty() && spares_left >= static_cast<int>(pf.failed_ranks.size());
        pf.event["action"] = pf.failed_ranks.empty() ? "none"
                             : drain                 ? "drain"
                                                     : "none: not enough spares, launching anyway";
        log.append(pf.event, Durability::fsync);
        if (!drain) {
          if (!pf.failed_ranks.empty())
            log::warn(
                "supervisor: pre-flight failed on {} rank(s) and {} spare(s) are left; launching anyway",
                pf.failed_ranks.size(), spares_left);
          break;
        }
        for (const auto& f : pf.event["failed"])
          drain_rank(f["rank"].get<int>(), "preflight",
                     fmt::format("pre-flight health check failed: {}", f["reason"].get<std::string>()),
                     f["host"].get<std::string>());
      }
    }
    write_file_atomic(o.run_dir / "placement.json",
                      nlohmann::json{{"slots", slots}, {"since_s", since}}.dump() + "\n");
    const auto first_event = read_event_log(log_path).events.size();
    const auto cmd = launch_command(current, attempt);
    {
      auto e = make_event(event::attempt_start);
      e["attempt"] = attempt;
      e["slots"] = slots;
      e["command"] = cmd;
      log.append(e, Durability::fsync);
    }
    const auto out_path = o.run_dir / fmt::format("attempt-{}.log", attempt);
    EnvChanges env{{"FB_SUPERVISED", "1"},
                   {"FB_ATTEMPT", std::to_string(attempt)},
                   {"FB_SPARES", std::to_string(o.spares)}};
    // The job stops by itself at the first step boundary past the deadline (rank 0's clock decides).
    if (o.time_budget_s > 0) env.emplace_back("FB_DEADLINE", fmt::format("{:.6f}", t_job + o.time_budget_s));
    const pid_t child = spawn(cmd, out_path, env);
    int status = 0;
    std::uint64_t seen = log_size(log_path);
    double last_beat = wall_now(), detected_at = 0;
    bool silent = false, budget = false;
    while (true) {
      const pid_t w = ::waitpid(child, &status, WNOHANG);
      if (w == child) {
        detected_at = wall_now();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto size = log_size(log_path);
      const double now = wall_now();
      if (size != seen) seen = size, last_beat = now;
      if (now - last_beat > o.heartbeat_timeout_s) silent = true;
      if (o.time_budget_s > 0 && now - t_job > o.time_budget_s + kTimeBudgetGraceS) budget = true;
      if (silent || budget) {
        detected_at = now;
        if (o.launcher == "srun") {
          stop_srun_attempt(child, status, false, srun_step_name(o, attempt));
        } else {
          ::kill(-child, SIGKILL);
          ::waitpid(child, &status, 0);
        }
        break;
      }
    }
    if (o.launcher == "srun" && !silent && !budget)
      stop_srun_attempt(child, status, true, srun_step_name(o, attempt));
    ::kill(-child,
           SIGKILL);  // whatever is left of the attempt's process group (ranks, the launcher's helpers)

    auto events = read_event_log(log_path).events;
    std::vector<nlohmann::json> mine(events.begin() + static_cast<long>(std::min(first_event, events.size())),
                                     events.end());
    std::int64_t last_step = 0;
    bool completed = false, failure_logged = false, budget_end = false, started = false;
    for (const auto& e : mine) {
      if (e["type"] == event::init_done) started = true;
      if (e["type"] == event::step)
        last_step = std::max<std::int64_t>(last_step, e["step"].get<std::int64_t>());
      if (e["type"] == event::attempt_end && e.value("reason", "") == "completed") completed = true;
      if (e["type"] == event::attempt_end && e.value("reason", "") == "time budget") budget_end = true;
      if (e["type"] == event::failure_detected && e.value("fatal", true)) failure_logged = true;
      if (e["type"] == event::straggler_detected) {
        const int r = e.value("rank", -1);
        if (r >= 0 && r < o.ranks) ++strikes[slots[static_cast<std::size_t>(r)]];
      }
    }
    // A job that stopped for the deadline after its last step did finish.
    completed = (completed || budget_end) && last_step >= o.steps && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0 && !budget;
    if (budget_end && !completed) budget = true;
    // Exit status 2 before any step: the job rejected its options (e.g. --state-bytes beyond the memory);
    // every relaunch would do the same.
    if (!completed && !failure_logged && !budget && !silent && last_step == 0 && WIFEXITED(status) &&
        WEXITSTATUS(status) == 2) {
      std::string why = tail_of(out_path, 4096);
      if (const auto at = why.find("error: "); at != std::string::npos) why = why.substr(at + 7);
      if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
      result.stop_reason = fmt::format("the training job rejected its options: {}", why);
      break;
    }
    // The launcher itself failed (no slots, refused to run as root, a bad host): no rank got through its
    // start-up. Once may be a node's hiccup; twice in a row is the set-up, and relaunching cannot fix it.
    failed_launches =
        !completed && !started && !failure_logged && !budget && !silent ? failed_launches + 1 : 0;
    if (failed_launches >= 2) {
      result.stop_reason = fmt::format("attempts {} and {} failed before any rank started ({}): {}; see {}",
                                       attempt - 1, attempt, describe_status(status),
                                       launcher_complaint(tail_of(out_path, 8192)), out_path.string());
      break;
    }
    int failed_rank = -1;
    if (!completed && !failure_logged && !budget) {
      const std::string out = tail_of(out_path, 64 * 1024);
      failed_rank = failed_rank_from_launcher_output(out);
      auto e = make_event(event::failure_detected, detected_at);
      e["kind"] = silent ? "hang" : "crash";
      e["rank"] = failed_rank;
      e["how"] =
          silent ? fmt::format("supervisor: event log silent for {:.0f} s; job killed", o.heartbeat_timeout_s)
                 : fmt::format("supervisor: job ended ({}){}", describe_status(status),
                               failed_rank >= 0 ? fmt::format("; launcher: rank {} died", failed_rank) : "");
      log.append(e, Durability::fsync);
    }
    {  // the rank blamed by this attempt's fatal failure gets a strike
      auto ev = read_event_log(log_path).events;
      for (std::size_t i = first_event; i < ev.size(); ++i)
        if (ev[i]["type"] == event::failure_detected && ev[i].value("fatal", true)) {
          const int r = ev[i].value("rank", -1);
          if (r >= 0 && r < o.ranks) ++strikes[slots[static_cast<std::size_t>(r)]];
          if (r >= 0 && r < o.ranks && o.launcher == "srun") {
            std::string host = ev[i].value("host", "");
            if (host.empty()) host = failed_host_from_launcher_output(tail_of(out_path, 64 * 1024));
            if (!host.empty()) slot_host[slots[static_cast<std::size_t>(r)]] = host;
          }
          break;
        }
    }
    if (completed) {
      result.completed = true;
      result.stop_reason = "completed";
      break;
    }
    if (budget || budget_spent()) {
      result.stop_reason = "time budget spent";
      break;
    }
    if (attempt - 1 >= o.max_restarts) {
      result.stop_reason = "restarts exhausted";
      break;
    }
    if (o.policy == "drain") {
      for (int r = 0; r < o.ranks; ++r) {
        const int slot = slots[static_cast<std::size_t>(r)];
        if (strikes[slot] < o.drain_after || spares_left == 0) continue;
        const auto h = slot_host.find(slot);
        drain_rank(r, "failures",
                   fmt::format("slot {} failed or straggled {} time(s) (--drain-after {})", slot,
                               strikes[slot], o.drain_after),
                   h != slot_host.end() ? h->second : std::string());
      }
    }
    auto e = make_event(event::relaunch);
    e["next_attempt"] = attempt + 1;
    log.append(e, Durability::fsync);
  }
  {
    auto e = make_event(event::job_end);
    e["reason"] = result.stop_reason;
    e["completed"] = result.completed;
    log.append(e, Durability::fsync);
  }
  const auto contents = read_event_log(log_path);
  result.events = contents.events;
  result.ledger = compute_ledger(result.events);
  result.ledger.torn_lines = contents.torn_lines;
  // MTTF before and after the first drain for failures: the log split at the drain.
  const auto first = std::find_if(result.drains.begin(), result.drains.end(),
                                  [](const nlohmann::json& d) { return d.value("cause", "") == "failures"; });
  if (first != result.drains.end()) {
    const double t_drain = (*first)["t"].get<double>();
    std::vector<nlohmann::json> before, after;
    for (const auto& ev : result.events) (ev["t"].get<double>() < t_drain ? before : after).push_back(ev);
    auto end = make_event(event::job_end, t_drain);
    before.push_back(end);
    after.insert(after.begin(), make_event(event::job_start, t_drain));
    const auto lb = compute_ledger(before), la = compute_ledger(after);
    result.mttf_before_drain_s = lb.mttf_s;
    result.mttf_after_drain_s = la.mttf_s;
    result.failures_before_drain = lb.failures;
    result.failures_after_drain = la.failures;
  }
  return result;
}

}  // namespace fb::resilience
