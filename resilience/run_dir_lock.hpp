#pragma once
// One training job per run directory. Two jobs in one run dir (a re-run while an orphaned job, whose
// launcher was killed, still trains; two shells) would commit and prune each other's checkpoints and mix
// their event logs. Rank 0 holds an exclusive flock(2) on the directory itself and on RUN_DIR/.lock (which
// names the holder) for the job's life: the kernel releases them when the process ends, however it ends
// (kill -9 included), so a stale lock cannot outlive its job, and deleting .lock does not free the run dir.
#include <filesystem>
#include <optional>
#include <string>

#include "core/mpi_context.hpp"

namespace fb::resilience {

// The holder ("pid P on HOST", or "another job") of `dir` when a training job holds its lock now, or a
// supervisor its .supervisor.lock; nullopt when free (or when `dir` does not exist). A check only, for a
// command about to clear a run dir before it launches the job that will lock it (resilience).
std::optional<std::string> run_dir_holder(const std::filesystem::path& dir);
// True when `path` is (or would be) one of the files a training job or its supervisor keeps in run dir `dir`:
// its event log, checkpoints, locks, heartbeats and call states, attempt reports and logs, placement,
// --policy compare's per-policy run dirs. -o there would replace what a restore or a relaunch reads; a report
// beside them (DIR/report.json) is fine.
bool is_run_dir_file(const std::filesystem::path& dir, const std::filesystem::path& path);
// "--run-dir DIR is in use by HOLDER (its lock DIR/.lock): stop that job, or choose another --run-dir"
std::string run_dir_in_use_message(const std::filesystem::path& dir, const std::string& holder);

// A supervisor's hold on its run dir for the whole job, relaunch gaps included (no training job holds .lock
// then): an exclusive flock(2) on RUN_DIR/.supervisor.lock, which run_dir_holder checks. Its training jobs
// lock .lock and the directory as usual. Throws the in-use usage Error when the run dir is held.
class SupervisorRunDirLock {
 public:
  explicit SupervisorRunDirLock(const std::filesystem::path& dir);
  ~SupervisorRunDirLock();
  SupervisorRunDirLock(const SupervisorRunDirLock&) = delete;
  SupervisorRunDirLock& operator=(const SupervisorRunDirLock&) = delete;

 private:
  int fd_ = -1;
};

// FACTORYBENCH_RUN_DIR_LOCK_WAIT in seconds (0 to 86400), or `fallback` when unset; a usage Error naming a
// value that is not one. Read by the lock as it is taken; a command that will take it (train with --run-dir,
// resilience, a suite's preflight of either) calls it first, so a typo is refused before anything runs.
double run_dir_lock_wait(double fallback = 10);

class RunDirLock {
 public:
  // Creates `dir` and takes the lock on rank 0, waiting up to `wait_s` for a job that is ending (a relaunch
  // racing its predecessor's teardown). Every rank learns the outcome; if the lock stays taken, every rank
  // throws a usage Error naming the directory and the holder (pid and host, from the lock file).
  // FACTORYBENCH_RUN_DIR_LOCK_WAIT (seconds) overrides `wait_s`.
  RunDirLock(const std::filesystem::path& dir, MpiContext& mpi, double wait_s = 10);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;      // RUN_DIR/.lock
  int dir_fd_ = -1;  // RUN_DIR; -1 where the file system cannot lock a directory
};

}  // namespace fb::resilience
