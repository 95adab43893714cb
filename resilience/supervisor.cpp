#include "resilience/supervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "resilience/event_log.hpp"

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
  std::vector<std::string> cmd;
  if (o.launcher == "mpirun") {
    cmd = {"mpirun", "-np", std::to_string(o.ranks)};
  } else if (o.launcher == "srun") {
    // --kill-on-bad-exit: one dead rank ends the step instead of leaving the others blocked in a collective.
    cmd = {"srun", "-n", std::to_string(o.ranks), "--kill-on-bad-exit=1",
           "--job-name=" + srun_step_name(o, attempt)};
    if (!o.exclude_hosts.empty())
      cmd.push_back("--exclude=" + fmt::format("{}", fmt::join(o.exclude_hosts, ",")));
  }
  for (const auto& a : o.launcher_args) cmd.push_back(a);
  cmd.push_back(o.binary.empty() ? self_exe() : o.binary);
  cmd.push_back("train");
  for (const auto& a : o.train_args) cmd.push_back(a);
  cmd.insert(cmd.end(), {"--run-dir", o.run_dir.string(), "--steps", std::to_string(o.steps), "--resume",
                         "--warmup-steps", "0"});
  if (!o.faults.empty()) cmd.insert(cmd.end(), {"--faults", o.faults});
  return cmd;
}

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
    log.append(e, Durability::fsync);
  }
  std::vector<int> slots(static_cast<std::size_t>(o.ranks));
  for (int r = 0; r < o.ranks; ++r) slots[static_cast<std::size_t>(r)] = r;
  int next_spare = o.ranks, spares_left = o.spares;
  std::map<int, int> strikes;  // slot → failures + straggler reports
  std::map<int, std::string>
      slot_host;                  // srun: slot → node it last failed on, excluded when the slot is drained
  SupervisorOptions current = o;  // srun: exclude_hosts grows with the drained nodes
  SupervisorResult result;
  int attempt = 0;
  while (true) {
    ++attempt;
    write_file_atomic(o.run_dir / "placement.json", nlohmann::json{{"slots", slots}}.dump() + "\n");
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
      ::setenv("FB_SUPERVISED", "1", 1);
      ::setenv("FB_ATTEMPT", std::to_string(attempt).c_str(), 1);
      ::setenv("FB_SPARES", std::to_string(o.spares).c_str(), 1);
      std::vector<char*> argv;
      for (const auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "cannot run %s\n", argv[0]);
      std::_Exit(127);
    }
    ::setpgid(child, child);
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
      if (o.time_budget_s > 0 && now - t_job > o.time_budget_s) budget = true;
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
    bool completed = false, failure_logged = false;
    for (const auto& e : mine) {
      if (e["type"] == event::step)
        last_step = std::max<std::int64_t>(last_step, e["step"].get<std::int64_t>());
      if (e["type"] == event::attempt_end && e.value("reason", "") == "completed") completed = true;
      if (e["type"] == event::failure_detected && e.value("fatal", true)) failure_logged = true;
      if (e["type"] == event::straggler_detected) {
        const int r = e.value("rank", -1);
        if (r >= 0 && r < o.ranks) ++strikes[slots[static_cast<std::size_t>(r)]];
      }
    }
    completed = completed && last_step >= o.steps && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !budget;
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
    if (budget) {
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
        auto e = make_event(event::drain);
        e["rank"] = r;
        e["from_slot"] = slot;
        e["to_slot"] = next_spare;
        e["strikes"] = strikes[slot];
        e["reason"] = fmt::format("slot {} failed or straggled {} time(s) (--drain-after {})", slot,
                                  strikes[slot], o.drain_after);
        if (const auto h = slot_host.find(slot);
            h != slot_host.end() && std::find(current.exclude_hosts.begin(), current.exclude_hosts.end(),
                                              h->second) == current.exclude_hosts.end()) {
          e["host"] = h->second;
          current.exclude_hosts.push_back(h->second);  // srun --exclude from the next attempt on
        }
        log.append(e, Durability::fsync);
        result.drains.push_back(e);
        slots[static_cast<std::size_t>(r)] = next_spare++;
        --spares_left;
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
  // MTTF before and after the first drain: the log split at the drain.
  if (!result.drains.empty()) {
    const double t_drain = result.drains.front()["t"].get<double>();
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
