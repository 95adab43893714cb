#pragma once
// While rank 0 waits in MPI's start-up (MPI_Init returns once every rank has joined): a warning after a
// while, and again at each doubling of the wait, so a job held there by a rank that never comes (a node that
// did not start it, a launcher stuck on one) is not silent until the scheduler's limit. The thread only logs;
// it makes no MPI call.
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace fb::tools {

// FACTORYBENCH_MPI_START_NOTICE: seconds before the first warning (default 60; 0 for none). Anything else is
// a usage error, named (every rank reads it alike, before MPI starts).
double mpi_start_notice_seconds();

class MpiStartNotice {
 public:
  // Nothing when after_s is 0. world_size: the launcher's, where it says; report_written: -o holds the
  // start-up report.
  MpiStartNotice(double after_s, std::optional<int> world_size, bool report_written);
  ~MpiStartNotice();  // MPI is up (or its start threw): no more warnings
  MpiStartNotice(const MpiStartNotice&) = delete;
  MpiStartNotice& operator=(const MpiStartNotice&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace fb::tools
