// RemoveOnSignal in a forked child that a signal ends: what goes and what stays, and that the exit status
// is still the signal's.
#include "core/remove_on_signal.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

namespace fb {
namespace {

namespace fs = std::filesystem;

class RemoveOnSignalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fb-remove-on-signal-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "shared");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void touch(const fs::path& p) { std::ofstream(p) << "x\n"; }

  // Runs `body` in a child, then raises `sig` there; returns the child's wait status.
  static int in_child(const std::function<void()>& body, int sig) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      body();
      ::raise(sig);
      ::_exit(0);  // only when the signal did not end the child
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  fs::path dir_;
};

TEST_F(RemoveOnSignalTest, SigtermRemovesTheFilesAndTheEmptiedDirectory) {
  const auto shared = dir_ / "shared";
  const int status = in_child(
      [&] {
        touch(shared / "rank-0.state");
        static RemoveOnSignal guard({shared / "rank-0.state", shared / ".rank-0.state.tmp"}, shared,
                                    shared / "hang.reported");
      },
      SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(fs::exists(shared));  // a file that never existed (the .tmp) is no obstacle
}

TEST_F(RemoveOnSignalTest, ADirectoryOtherRanksStillUseStays) {
  const auto shared = dir_ / "shared";
  touch(shared / "rank-1.state");  // another rank's, not yet removed
  const int status = in_child(
      [&] {
        touch(shared / "rank-0.state");
        static RemoveOnSignal guard({shared / "rank-0.state"}, shared);
      },
      SIGINT);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_FALSE(fs::exists(shared / "rank-0.state"));
  EXPECT_TRUE(fs::exists(shared / "rank-1.state"));
}

TEST_F(RemoveOnSignalTest, AClaimedHangKeepsEverything) {
  const auto shared = dir_ / "shared";
  touch(shared / "hang.reported");
  const int status = in_child(
      [&] {
        touch(shared / "rank-0.state");
        static RemoveOnSignal guard({shared / "rank-0.state"}, shared, shared / "hang.reported");
      },
      SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::exists(shared / "rank-0.state"));
}

TEST_F(RemoveOnSignalTest, SeveralGuardsAtOnceEachRemoveTheirs) {
  // health: the scratch checkpoint file while the hang watchdog guards its state files.
  const auto shared = dir_ / "shared";
  const auto scratch = dir_ / "scratch.tmp";
  const int status = in_child(
      [&] {
        touch(shared / "rank-0.state");
        touch(scratch);
        static RemoveOnSignal watchdog({shared / "rank-0.state"}, shared);
        static RemoveOnSignal file({scratch});
      },
      SIGHUP);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGHUP);
  EXPECT_FALSE(fs::exists(shared));
  EXPECT_FALSE(fs::exists(scratch));
}

TEST_F(RemoveOnSignalTest, AfterTheLastGuardTheSignalTouchesNothing) {
  const auto file = dir_ / "kept";
  const int status = in_child(
      [&] {
        touch(file);
        { const RemoveOnSignal first({file}); }
        const RemoveOnSignal other({dir_ / "other"});  // a second guard, gone before the signal too
      },
      SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);  // the default action again, not a handler that returned
  EXPECT_TRUE(fs::exists(file));
}

TEST_F(RemoveOnSignalTest, AnIgnoredSignalStaysIgnored) {
  const auto file = dir_ / "nohup";
  const int status = in_child(
      [&] {
        touch(file);
        ::signal(SIGHUP, SIG_IGN);
        static RemoveOnSignal guard({file});
      },
      SIGHUP);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(fs::exists(file));
}

}  // namespace
}  // namespace fb
