#include "core/wait_notice.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"

namespace fb {

double start_up_wait_notice_seconds() {
  const char* v = std::getenv("FACTORYBENCH_START_NOTICE");
  if (!v || !*v) return 60;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || errno == ERANGE || !(s >= 0 && s <= 86400))
    throw usage_error(fmt::format(
        "invalid FACTORYBENCH_START_NOTICE '{}': expected seconds before the first warning that the start-up "
        "(MPI's, NCCL's) still waits for a rank, 0 (none) to 86400",
        v));
  return s;
}

WaitNotice::WaitNotice(double after_s, std::function<std::string(double waited_s)> message) {
  if (!(after_s > 0)) return;
  thread_ = std::thread([this, after_s, message = std::move(message)] {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    double next_s = after_s;
    std::unique_lock lock(mutex_);
    for (;;) {
      const auto at =
          start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(next_s));
      if (cv_.wait_until(lock, at, [this] { return done_; })) return;
      log::warn("{}", message(next_s));
      next_s *= 2;
    }
  });
}

WaitNotice::~WaitNotice() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace fb
