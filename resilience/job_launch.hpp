#pragma once
// Private to resilience/: the process handling behind the supervisor (resilience/supervisor.cpp), defined in
// resilience/job_launch.cpp with the launcher command lines and the parsing of the launchers' output.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fb::resilience {

// Environment changes for a child: (name, value); a null value unsets.
using EnvChanges = std::vector<std::pair<std::string, std::optional<std::string>>>;

// Starts `cmd` in a process group of its own, stdout and stderr to `out_path`. Its environment is ours
// without an enclosing MPI job's wiring (resilience/launch_environment.hpp: the supervisor may itself be a
// rank of a `suite` job) plus `changes` (a null value unsets). Everything is prepared before fork(): the
// child only redirects and execs.
pid_t spawn(const std::vector<std::string>& cmd, const std::filesystem::path& out_path,
            const EnvChanges& changes);

// Runs `cmd` in a process group of its own, stdout and stderr to `out_path`, with `env` set (a null value
// unsets); the whole group is killed after `timeout_s`. Returns the wait status.
int run_child(const std::vector<std::string>& cmd, const std::filesystem::path& out_path,
              const EnvChanges& env, double timeout_s, bool& timed_out);

// srun's tasks run under slurmstepd, outside srun's process group: killing srun alone leaves them running.
// SIGTERM makes srun cancel its step; a step still listed after srun is gone is cancelled by id.
void stop_srun_attempt(pid_t child, int& status, bool reaped, const std::string& step_name);

// "exit status N", "killed by signal N" or "stopped".
std::string describe_status(int status);

// The last `n` bytes of a file ("" when it cannot be read).
std::string tail_of(const std::filesystem::path& p, std::size_t n);

// A file's size (0 when it does not exist).
std::uint64_t log_size(const std::filesystem::path& p);

}  // namespace fb::resilience
