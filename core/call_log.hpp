#pragma once
// Per-rank sequence numbers of communication calls (issue 17, hang localization). Every collective and
// point-to-point call of the communication engines enters and leaves the process-wide log; a watchdog
// thread (core/hang_watchdog.hpp) reads it to say which call a rank is stuck in, or never entered.
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace fb {

struct CallState {
  std::uint64_t entered = 0;  // sequence number of the last call entered (calls are numbered from 1)
  std::uint64_t left = 0;     // ... and of the last call left; entered > left while inside a call
  std::string op;             // the last call entered: "allreduce", "send", ...
  std::uint64_t bytes = 0;    // its payload on this rank
  int peer = -1;              // a send's or recv's peer, as a world rank; -1 for a collective (or unknown)
  double entered_at_s = 0;    // steady-clock seconds when it was entered
  // A job-wide wait outside the numbered calls ("barrier", "allgather": the bookkeeping between measured
  // calls) this rank is in now; empty otherwise. Such a rank is not idle: it waits for the others, so a
  // hang diagnosis must not name it as the rank that never entered the next call.
  std::string waiting;
};

class CallLog {
 public:
  static CallLog& instance();
  // Returns the new call's sequence number. Injected hangs (FACTORYBENCH_INJECT hang@rank=R,call=K) stop
  // world rank R here, before call K is entered, for good.
  std::uint64_t enter(std::string_view op, std::uint64_t bytes, int peer = -1);
  void leave();
  void set_waiting(std::string_view op);  // "" when the wait is over
  CallState snapshot() const;
  void set_world_rank(int rank) { world_rank_ = rank; }

 private:
  mutable std::mutex mutex_;
  CallState state_;
  int world_rank_ = -1;
};

// Enters on construction, leaves on destruction (also when the call throws).
class CallScope {
 public:
  CallScope(std::string_view op, std::uint64_t bytes, int peer = -1) {
    CallLog::instance().enter(op, bytes, peer);
  }
  ~CallScope() { CallLog::instance().leave(); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
};

// Marks a job-wide wait outside the numbered calls for its lifetime (MpiContext barriers, rank collectives).
class WaitScope {
 public:
  explicit WaitScope(std::string_view op) { CallLog::instance().set_waiting(op); }
  ~WaitScope() { CallLog::instance().set_waiting({}); }
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;
};

double steady_seconds();

}  // namespace fb
