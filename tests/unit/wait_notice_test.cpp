// The start-up wait notice (core/wait_notice.hpp): a warning after a while and at each doubling of the wait,
// none once the wait is over, none at all with a delay of 0; FACTORYBENCH_START_NOTICE read strictly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/wait_notice.hpp"

namespace fb {
namespace {

struct Said {
  std::mutex mutex;
  std::vector<double> waited;
  std::size_t count() {
    std::lock_guard lock(mutex);
    return waited.size();
  }
};

TEST(WaitNotice, WarnsAtTheDelayThenAtEachDoublingAndNotOnceTheWaitIsOver) {
  log::configure(0, log::Level::error, true);  // the text is the test's: nothing on stderr
  Said said;
  {
    const WaitNotice notice(0.01, [&said](double waited_s) {
      std::lock_guard lock(said.mutex);
      said.waited.push_back(waited_s);
      return std::string("still waiting");
    });
    for (int i = 0; i < 500 && said.count() < 3; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto after = said.count();
  ASSERT_GE(after, 3u);
  EXPECT_EQ(said.waited[0], 0.01);
  EXPECT_EQ(said.waited[1], 0.02);
  EXPECT_EQ(said.waited[2], 0.04);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(said.count(), after);  // the wait is over: the thread has ended
}

TEST(WaitNotice, ZeroSaysNothingAndALongDelayEndsAtOnce) {
  int calls = 0;
  {
    const WaitNotice none(0, [&calls](double) { return std::to_string(++calls); });
  }
  EXPECT_EQ(calls, 0);
  const auto start = std::chrono::steady_clock::now();
  {
    const WaitNotice hour(3600, [&calls](double) { return std::to_string(++calls); });
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));  // not the hour
  EXPECT_EQ(calls, 0);
}

TEST(WaitNotice, TheVariableIsSecondsOrAUsageError) {
  unsetenv("FACTORYBENCH_START_NOTICE");
  EXPECT_EQ(start_up_wait_notice_seconds(), 60);
  setenv("FACTORYBENCH_START_NOTICE", "0", 1);
  EXPECT_EQ(start_up_wait_notice_seconds(), 0);
  setenv("FACTORYBENCH_START_NOTICE", "2.5", 1);
  EXPECT_EQ(start_up_wait_notice_seconds(), 2.5);
  for (const char* bad : {"1m", "-1", "86401", "nan", "inf", " "}) {
    setenv("FACTORYBENCH_START_NOTICE", bad, 1);
    try {
      start_up_wait_notice_seconds();
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage) << bad;
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
  unsetenv("FACTORYBENCH_START_NOTICE");
}

}  // namespace
}  // namespace fb
