// Progress lines: silent at first, then at most one line per interval, with the share, the time spent and
// the time left at the measured rate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/progress_meter.hpp"

namespace fb {
namespace {

TEST(ProgressMeterTest, LineCarriesShareElapsedAndTimeLeft) {
  EXPECT_EQ(progress_line("gemm sweep", 0.25, "16/64 shapes", 10),
            "gemm sweep: 25% (16/64 shapes), 10 s elapsed, about 30 s left");
  EXPECT_EQ(progress_line("train", 0, "", 4), "train: 0%, 4 s elapsed");
  EXPECT_EQ(progress_line("x", 1.5, "", 4), "x: 100%, 4 s elapsed");
}

TEST(ProgressMeterTest, SilentForTheFirstSecondsThenOneLinePerInterval) {
  using Clock = ProgressMeter::Clock;
  Clock::time_point t{};
  std::vector<std::string> lines;
  ProgressMeter meter(
      "train", 100, 3, 2, [&](const std::string& l) { lines.push_back(l); }, [&] { return t; });
  int due = 0;
  for (int step = 0; step < 100; ++step) {
    t += std::chrono::milliseconds(250);  // 4 steps a second: 25 s in all
    const bool will_print = meter.due();  // exactly when update() prints
    const int before = meter.lines();
    meter.update(step, "step " + std::to_string(step));
    EXPECT_EQ(will_print, meter.lines() == before + 1) << step;
    due += will_print ? 1 : 0;
  }
  EXPECT_EQ(due, 12);
  // Quiet until 3 s, then every 2 s up to 25 s: at 3, 5, ..., 25 s.
  ASSERT_EQ(lines.size(), 12u);
  EXPECT_EQ(meter.lines(), 12);
  EXPECT_EQ(lines.front(), "train: 11% (step 11), 3 s elapsed, about 24.3 s left");
}

}  // namespace
}  // namespace fb
