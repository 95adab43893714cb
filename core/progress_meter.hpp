#pragma once
// Progress on stderr for work that takes more than a few seconds (GEMM sweeps, training steps, simulator
// trials): silent for the first seconds, then one line every few seconds with the share done, the time spent
// and the time left at the rate measured so far. Goes through log::info, so rank 0 speaks and --quiet
// silences.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace fb {

class ProgressMeter {
 public:
  using Clock = std::chrono::steady_clock;
  // `what` starts each line ("gemm sweep"); `total` is the work in any unit (cases, steps, events).
  // `sink` replaces log::info (tests); `now` replaces the steady clock (tests).
  explicit ProgressMeter(std::string what, double total, double quiet_for_s = 3, double every_s = 2,
                         std::function<void(const std::string&)> sink = {},
                         std::function<Clock::time_point()> now = {});
  // `done` units of `total` are finished; `detail` follows the percentage ("12/64 shapes").
  void update(double done, std::string_view detail = {});
  // Whether update() would print now: a hot loop asks first and builds its detail text only then.
  bool due() const;
  int lines() const { return lines_; }

 private:
  Clock::time_point clock() const;
  std::string what_;
  double total_, every_s_;
  std::function<void(const std::string&)> sink_;
  std::function<Clock::time_point()> now_;
  Clock::time_point start_, next_;
  int lines_ = 0;
};

// The line update() prints, as a pure function: "gemm sweep: 42% (12/64 shapes), 8 s elapsed, about 11 s
// left".
std::string progress_line(std::string_view what, double share, std::string_view detail, double elapsed_s);

}  // namespace fb
