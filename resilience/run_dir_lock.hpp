#pragma once
// One training job per run directory. Two jobs in one run dir (a re-run while an orphaned job, whose
// launcher was killed, still trains; two shells) would commit and prune each other's checkpoints and mix
// their event logs. Rank 0 holds an exclusive flock(2) on the directory itself and on RUN_DIR/.lock (which
// names the holder) for the job's life: the kernel releases them when the process ends, however it ends
// (kill -9 included), so a stale lock cannot outlive its job, and deleting .lock does not free the run dir.
#include <filesystem>

#include "core/mpi_context.hpp"

namespace fb::resilience {

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
