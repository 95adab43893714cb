// The supervisor's launch and process handling: the launcher command lines of the attempts and pre-flights,
// child processes in process groups of their own (spawned, waited for, killed as a whole; srun steps
// cancelled), and what the launchers' output says about the rank or node that failed.
#include "resilience/job_launch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "resilience/event_log.hpp"
#include "resilience/launch_environment.hpp"
#include "resilience/supervisor.hpp"

namespace fb::resilience {
namespace fs = std::filesystem;
namespace {

// The binary every attempt runs: this process's, by the path it was started from. The path is read once:
// a redeploy that renames a new binary over it leaves /proc/self/exe naming "PATH (deleted)", which no
// relaunch can execute; the path itself then holds the new build, which a relaunch runs, with a warning.
std::string self_exe() {
  struct Exe {
    std::string path = "factorybench";
    struct stat st {};
    bool known = false;
  };
  static const Exe first = [] {
    Exe e;
    std::error_code ec;
    const auto p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return e;
    e.path = p.string();
    e.known = ::stat(e.path.c_str(), &e.st) == 0;
    return e;
  }();
  struct stat now {};
  if (first.known && ::stat(first.path.c_str(), &now) == 0 &&
      (now.st_ino != first.st.st_ino || now.st_dev != first.st.st_dev ||
       now.st_mtim.tv_sec != first.st.st_mtim.tv_sec || now.st_mtim.tv_nsec != first.st.st_mtim.tv_nsec))
    log::warn("supervisor: {} was replaced since the job started; this attempt runs the new binary",
              first.path);
  return first.path;
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
    ::signal(SIGPIPE, SIG_DFL);  // factorybench ignores it (tools/main.cpp); what it runs need not
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

// The launcher and the binary: `mpirun -np N [args] factorybench` or `srun -n N ... [args] factorybench`.
std::vector<std::string> launcher_prefix(const SupervisorOptions& o, const std::string& step_name) {
  std::vector<std::string> cmd;
  if (o.launcher == Launcher::mpirun) {
    cmd = {"mpirun", "-np", std::to_string(o.ranks)};
  } else if (o.launcher == Launcher::srun) {
    // --kill-on-bad-exit: one dead rank ends the step instead of leaving the others blocked in a collective.
    cmd = {"srun", "-n", std::to_string(o.ranks), "--kill-on-bad-exit=1", "--job-name=" + step_name};
    if (!o.exclude_hosts.empty())
      cmd.push_back("--exclude=" + fmt::format("{}", fmt::join(o.exclude_hosts, ",")));
  }
  for (const auto& a : o.launcher_args) cmd.push_back(a);
  cmd.push_back(o.binary.empty() ? self_exe() : o.binary);
  return cmd;
}

}  // namespace

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
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) throw runtime_error("fork failed");
  if (child == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // factorybench ignores it (tools/main.cpp); the launcher need not
    ::setpgid(0, 0);
    // The launcher dies with the supervisor (SIGKILL, timeout, scancel): SIGTERM lets mpirun or srun end
    // the ranks, so no job trains on alone in a run dir nobody accounts for.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) std::_Exit(143);  // the supervisor was already gone
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
  // Each attempt's own report (its params show what the job was given) next to its console log.
  cmd.insert(cmd.end(), {"--run-dir", o.run_dir.string(), "--steps", std::to_string(o.steps), "--resume",
                         "--warmup-steps", "0", "--output",
                         (o.run_dir / fmt::format("attempt-{}.json", attempt)).string()});
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
  // Its hang watchdog's state files (a diagnosis left after a hang) go to the run dir, not the cwd.
  if (std::find(o.preflight_args.begin(), o.preflight_args.end(), "--run-dir") == o.preflight_args.end())
    cmd.insert(cmd.end(), {"--run-dir", o.run_dir.string()});
  cmd.insert(cmd.end(), {"--output", report.string()});
  return cmd;
}

}  // namespace fb::resilience
