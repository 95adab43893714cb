#pragma once
// While a job's start-up waits in a call that returns only once every rank has come (MPI_Init, NCCL's
// ncclCommInitRank): a warning after a while, and again at each doubling of the wait, so a job held there by
// a rank that never comes is not silent until the scheduler's limit. The thread only logs (the caller's
// message); it makes no MPI or NCCL call.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace fb {

// FACTORYBENCH_START_NOTICE: seconds before the first warning (default 60; 0 for none), for MPI's start and
// NCCL's set-up alike. Anything else is
// a usage error, named (every rank reads it alike, before MPI starts).
double start_up_wait_notice_seconds();

class WaitNotice {
 public:
  // Nothing when after_s is 0. message(waited_s) is the warning's text.
  WaitNotice(double after_s, std::function<std::string(double waited_s)> message);
  ~WaitNotice();  // the wait is over (or it threw): no more warnings
  WaitNotice(const WaitNotice&) = delete;
  WaitNotice& operator=(const WaitNotice&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace fb
