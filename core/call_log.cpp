#include "core/call_log.hpp"

#include <chrono>
#include <thread>

#include "core/fault_injection.hpp"

namespace fb {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

CallLog& CallLog::instance() {
  static CallLog log;
  return log;
}

std::uint64_t CallLog::enter(std::string_view op, std::uint64_t bytes, int peer) {
  std::uint64_t next = 0;
  {
    std::lock_guard lock(mutex_);
    next = state_.entered + 1;
  }
  // The injected hang: this rank never enters call `next`; its peers wait inside it.
  if (injected_faults().hangs_at(world_rank_, next))
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  std::lock_guard lock(mutex_);
  state_.entered = next;
  state_.op = std::string(op);
  state_.bytes = bytes;
  state_.peer = peer;
  state_.entered_at_s = steady_seconds();
  return next;
}

void CallLog::leave() {
  std::lock_guard lock(mutex_);
  state_.left = state_.entered;
}

void CallLog::set_waiting(std::string_view op) {
  std::lock_guard lock(mutex_);
  state_.waiting = std::string(op);
}

CallState CallLog::snapshot() const {
  std::lock_guard lock(mutex_);
  return state_;
}

}  // namespace fb
