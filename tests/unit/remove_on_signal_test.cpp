// RemoveOnSignal in a forked child that a signal ends: what goes and what stays, and that the exit status
// is still the signal's.
#include "core/remove_on_signal.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
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

// LastWordOnSignal: the child raises the signal and goes on (sleeping) as a benchmark goes on measuring;
// the speaker says the word and ends it.
int raise_and_go_on(const std::function<void()>& body, int sig, double then_raise_s = -1, int then = 0) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::raise(sig);
    if (then_raise_s >= 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(then_raise_s));
      ::raise(then);
    }
    std::this_thread::sleep_for(std::chrono::seconds(15));
    ::_exit(0);  // only when no signal ended the child
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::string text;
  std::getline(in, text);
  return text;
}

TEST_F(RemoveOnSignalTest, TheLastWordIsSaidBeforeTheGuardsGoAndTheSignalEndsTheProcess) {
  const auto state = dir_ / "shared" / "rank-0.state";
  const auto said = dir_ / "said";
  const int status = raise_and_go_on(
      [&] {
        touch(state);
        static RemoveOnSignal guard({state}, dir_ / "shared");
        static LastWordOnSignal word([state, said](int sig) {
          std::ofstream(said) << sig << (fs::exists(state) ? " with the state file" : " too late") << "\n";
        });
      },
      SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);  // the exit status is still the signal's
  EXPECT_EQ(read_text(said), std::to_string(SIGTERM) + " with the state file");
  EXPECT_FALSE(fs::exists(state));
  EXPECT_FALSE(fs::exists(dir_ / "shared"));
}

TEST_F(RemoveOnSignalTest, TheInnermostLastWordSpeaksThenTheOuterOneAgain) {
  const auto said = dir_ / "said";
  const auto words = [&](bool inner_alive) {
    return raise_and_go_on(
        [&, inner_alive] {
          static LastWordOnSignal outer([said](int) { std::ofstream(said) << "outer\n"; });
          static std::optional<LastWordOnSignal> inner;
          inner.emplace([said](int) { std::ofstream(said) << "inner\n"; });
          if (!inner_alive) inner.reset();
        },
        SIGINT);
  };
  int status = words(true);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(read_text(said), "inner");
  status = words(false);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(read_text(said), "outer");
}

TEST_F(RemoveOnSignalTest, ASecondSignalWaitsForTheLastWord) {
  // Ctrl-C twice, or mpirun's SIGTERM to a rank the scheduler already signalled: the report is still written.
  const auto said = dir_ / "said";
  const int status = raise_and_go_on(
      [&] {
        static LastWordOnSignal word([said](int) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          std::ofstream(said) << "written\n";
        });
      },
      SIGTERM, 0.05, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);  // the first signal's
  EXPECT_EQ(read_text(said), "written");
}

TEST_F(RemoveOnSignalTest, AStuckLastWordGivesWayToASignalAfterThePatience) {
  const auto file = dir_ / "scratch.tmp";
  const int status = raise_and_go_on(
      [&] {
        touch(file);
        static RemoveOnSignal guard({file});
        static LastWordOnSignal word([](int) {
          for (;;) ::pause();  // a report that never gets written (a lock the signalled thread holds)
        });
      },
      SIGTERM, LastWordOnSignal::kPatienceSeconds + 0.3, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(RemoveOnSignalTest, ALastWordThatEndsWithTheRunWaitsForTheSignalThatCameFirst) {
  // The signal lands as the benchmark ends: the last word's destructor must not let the process exit 0
  // (or tear down what the speaker reads) under it.
  const auto said = dir_ / "said";
  const pid_t pid = ::fork();
  if (pid == 0) {
    {
      LastWordOnSignal word([said](int) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        std::ofstream(said) << "written\n";
      });
      ::raise(SIGHUP);
    }
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGHUP);
  EXPECT_EQ(read_text(said), "written");
}

TEST_F(RemoveOnSignalTest, AfterTheLastWordTheSignalSaysNothing) {
  const auto said = dir_ / "said";
  const int status = raise_and_go_on(
      [&] { const LastWordOnSignal word([said](int) { std::ofstream(said) << "said\n"; }); }, SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_FALSE(fs::exists(said));
}

}  // namespace
}  // namespace fb
