// RemoveOnSignal in a forked child that a signal ends: what goes and what stays, and that the exit status
// is still the signal's.
#include "core/remove_on_signal.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

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

bool caller_blocks(int sig) {
  sigset_t now;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &now);
  return sigismember(&now, sig) == 1;
}

TEST_F(RemoveOnSignalTest, ASignalWhileTheWorkIsBlockedRemovesTheFilesAtOnce) {
  // The work sits in a read that never returns, as a writer sits in fdatasync; the process-directed SIGTERM
  // (mpirun's) must reach the waiting caller, not wait for the worker.
  const auto file = dir_ / "scratch.tmp";
  touch(file);
  int ready[2], never[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(never), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    static RemoveOnSignal guard({file});
    run_with_signals_blocked([&] {
      const char worker_blocks =
          caller_blocks(SIGTERM) && caller_blocks(SIGINT) && caller_blocks(SIGHUP) ? '1' : '0';
      (void)!::write(ready[1], &worker_blocks, 1);
      char c;
      (void)!::read(never[0], &c, 1);
    });
    ::_exit(0);  // only when the signal did not end the child
  }
  char worker_blocks = 0;
  ASSERT_EQ(::read(ready[0], &worker_blocks, 1), 1);
  EXPECT_EQ(worker_blocks, '1');
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  for (const int fd : {ready[0], ready[1], never[0], never[1]}) ::close(fd);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(fs::exists(file));
}

// A thread that replaces a guarded file (temporary, then rename) while the signal's handler runs on another
// thread: the handler waits for the write to end before it unlinks, so the file does not reappear behind it
// (a hang watchdog's rank state file stayed in --run-dir after mpirun's SIGTERM, now and then, under load).
// The writer, held inside its write, notes when it finished; the handler must have waited for that note.
TEST_F(RemoveOnSignalTest, TheHandlerWaitsForAWriteUnderWayAndItsFileGoes) {
  const auto shared = dir_ / "shared";
  const auto state = shared / "rank-0.state", tmp = shared / ".rank-0.state.tmp";
  const auto finished = dir_ / "writer-finished";
  int in_write[2];
  ASSERT_EQ(::pipe(in_write), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    static RemoveOnSignal guard({state, tmp}, shared);
    std::thread writer([&] {
      sigset_t all;
      sigfillset(&all);
      ::pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the signal goes to the main thread
      const GuardedFileWrite write;
      if (!write.allowed()) ::_exit(3);
      touch(tmp);
      (void)!::write(in_write[1], "w", 1);
      ::usleep(100'000);  // the handler has started by now, and waits
      fs::rename(tmp, state);
      touch(finished);
    });
    ::pause();  // the signal ends the process here
    ::_exit(4);
  }
  char c = 0;
  ASSERT_EQ(::read(in_write[0], &c, 1), 1);
  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  for (const int fd : in_write) ::close(fd);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(fs::exists(finished)) << "the handler did not wait for the write under way";
  EXPECT_FALSE(fs::exists(state));
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_FALSE(fs::exists(shared));
}

TEST_F(RemoveOnSignalTest, TheWorkRunsToItsEndAndWhatItThrowsReachesTheCaller) {
  ASSERT_FALSE(caller_blocks(SIGTERM));
  int result = 0;
  run_with_signals_blocked([&] { result = 42; });
  EXPECT_EQ(result, 42);
  EXPECT_THROW(run_with_signals_blocked([] { throw std::runtime_error("disk full"); }), std::runtime_error);
  EXPECT_FALSE(caller_blocks(SIGTERM));  // the caller's mask is restored either way
}

}  // namespace
}  // namespace fb
