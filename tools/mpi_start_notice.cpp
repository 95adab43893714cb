#include "tools/mpi_start_notice.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/units.hpp"

namespace fb::tools {

double mpi_start_notice_seconds() {
  const char* v = std::getenv("FACTORYBENCH_MPI_START_NOTICE");
  if (!v || !*v) return 60;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || errno == ERANGE || !(s >= 0 && s <= 86400))
    throw usage_error(fmt::format(
        "invalid FACTORYBENCH_MPI_START_NOTICE '{}': expected seconds before the first warning that MPI's "
        "start-up still waits for a rank, 0 (none) to 86400",
        v));
  return s;
}

MpiStartNotice::MpiStartNotice(double after_s, std::optional<int> world_size, bool report_written) {
  if (!(after_s > 0)) return;
  thread_ = std::thread([this, after_s, world_size, report_written] {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    double next_s = after_s;
    std::unique_lock lock(mutex_);
    for (;;) {
      const auto at =
          start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(next_s));
      if (cv_.wait_until(lock, at, [this] { return done_; })) return;
      const std::string ranks = world_size ? fmt::format("all {} ranks", *world_size) : "every rank";
      log::warn(
          "MPI's start-up has waited {} for {} to join: one has not (a node that did not start it, a "
          "launcher "
          "stuck on one; the launcher's or the scheduler's log names it){}",
          format_duration(next_s), ranks,
          report_written ? "; -o holds a start-up report that says so until the run writes its own" : "");
      next_s *= 2;
    }
  });
}

MpiStartNotice::~MpiStartNotice() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace fb::tools
