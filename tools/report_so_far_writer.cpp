#include "tools/report_so_far_writer.hpp"

#include <algorithm>
#include <chrono>

#include "core/call_log.hpp"

namespace fb::tools {
namespace {

// A write is followed by this many times its duration without one: at most a twentieth of the run writing.
constexpr double kQuietPerWrite = 20;

}  // namespace

bool report_so_far_due(double since_last_s, double last_cost_s) {
  return since_last_s >= kQuietPerWrite * last_cost_s;
}

ReportSoFarWriter::ReportSoFarWriter(std::function<void()> write)
    : write_(std::move(write)), thread_([this] { run(); }) {}

ReportSoFarWriter::~ReportSoFarWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ReportSoFarWriter::request() {
  std::unique_lock lock(mutex_);
  if (report_so_far_due(steady_seconds() - last_end_s_, last_cost_s_)) {
    write_locked();
  } else {
    pending_ = true;
    lock.unlock();
    wake_.notify_one();
  }
}

void ReportSoFarWriter::write_locked() {
  pending_ = false;
  const double start = steady_seconds();
  try {
    write_();
  } catch (...) {  // the run goes on: its final report is what matters
  }
  last_end_s_ = steady_seconds();
  last_cost_s_ = last_end_s_ - start;
}

void ReportSoFarWriter::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || pending_; });
    if (stop_) return;
    const double now = steady_seconds();
    if (report_so_far_due(now - last_end_s_, last_cost_s_)) {
      write_locked();
      continue;
    }
    // Until it is due (at least a millisecond: a due time an ulp away is not spun on), or stopped.
    const double wait_s = std::max(last_end_s_ + kQuietPerWrite * last_cost_s_ - now, 1e-3);
    wake_.wait_for(lock, std::chrono::duration<double>(wait_s), [this] { return stop_; });
  }
}

}  // namespace fb::tools
