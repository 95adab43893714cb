// One job per run dir (resilience/run_dir_lock.hpp): a holder is found and named, and the probes that every
// rank of a job makes at once do not read each other as a holder.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/mpi_context.hpp"
#include "resilience/run_dir_lock.hpp"

namespace fs = std::filesystem;
using fb::resilience::run_dir_holder;
using fb::resilience::RunDirLock;
using fb::resilience::SupervisorRunDirLock;

namespace {

// An open file description of `path` of its own (as another process has), with `how` taken on it.
class HeldLock {
 public:
  HeldLock(const fs::path& path, int how, const std::string& text = "") {
    fd_ = ::open(path.c_str(), fs::is_directory(path) ? O_RDONLY | O_DIRECTORY : O_RDWR | O_CREAT, 0644);
    EXPECT_GE(fd_, 0) << path;
    if (!text.empty()) {
      EXPECT_EQ(::pwrite(fd_, text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
    }
    EXPECT_EQ(::flock(fd_, how | LOCK_NB), 0) << path;
  }
  ~HeldLock() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

class RunDirLockTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { static fb::MpiContext mpi(nullptr, nullptr); }
  void SetUp() override {
    dir = fs::temp_directory_path() / ("fb_run_dir_lock_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

}  // namespace

TEST_F(RunDirLockTest, NobodyHoldsAFreshOrMissingRunDir) {
  EXPECT_EQ(run_dir_holder(dir), std::nullopt);
  EXPECT_EQ(run_dir_holder(dir / "not-made"), std::nullopt);
}

TEST_F(RunDirLockTest, AJobsLockOnTheFileIsNamedWithItsText) {
  const HeldLock job(dir / ".lock", LOCK_EX, "pid 4242 on node-a\n");
  EXPECT_EQ(run_dir_holder(dir), "pid 4242 on node-a");
  EXPECT_EQ(fb::resilience::run_dir_in_use_message(dir, "pid 4242 on node-a"),
            "--run-dir " + dir.string() + " is in use by pid 4242 on node-a (its lock " +
                (dir / ".lock").string() + "): stop that job, or choose another --run-dir");
}

TEST_F(RunDirLockTest, ALockOnTheDirectoryAloneStillExcludes) {
  // Someone deleted .lock while its job ran: the directory's own lock is what the job still holds.
  const HeldLock job(dir, LOCK_EX);
  EXPECT_EQ(run_dir_holder(dir), "another job");
}

TEST_F(RunDirLockTest, ProbesAtOnceDoNotSeeEachOtherAsTheHolder) {
  // Every rank of a fresh job probes the run dir before rank 0 locks it. A probe in progress on another
  // rank holds its shared lock on the directory and the file: that is no holder. (Exclusive probes read
  // each other as "another job" and stopped 1 fresh 2-rank run in about 20 under load.)
  std::ofstream(dir / ".lock").put('\n');
  const HeldLock probe_dir(dir, LOCK_SH);
  const HeldLock probe_file(dir / ".lock", LOCK_SH);
  const HeldLock probe_supervisor(dir / ".supervisor.lock", LOCK_SH);
  EXPECT_EQ(run_dir_holder(dir), std::nullopt);
}

TEST_F(RunDirLockTest, ASupervisorHoldsItsRunDirAgainstAnotherOne) {
  const SupervisorRunDirLock first(dir);
  EXPECT_TRUE(run_dir_holder(dir).has_value());
  EXPECT_TRUE(run_dir_holder(dir)->starts_with("the supervisor pid " + std::to_string(::getpid()) + " on "));
  try {
    const SupervisorRunDirLock second(dir);
    FAIL() << "a second supervisor took the run dir";
  } catch (const fb::Error& e) {
    EXPECT_EQ(e.kind(), fb::ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("is in use by the supervisor pid"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(its lock " + (dir / ".supervisor.lock").string() + ")"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(RunDirLockTest, ASupervisorWaitsOutAProbeOfItsLock) {
  // A job's rank probing .supervisor.lock as the supervisor starts: the supervisor takes the lock once the
  // probe lets go, instead of refusing its own run dir.
  auto probe = std::make_unique<HeldLock>(dir / ".supervisor.lock", LOCK_SH);
  std::thread let_go([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    probe->release();
  });
  EXPECT_NO_THROW({ const SupervisorRunDirLock sup(dir); });
  let_go.join();
}

TEST_F(RunDirLockTest, AJobTakesTheLockAndNamesItselfThenLetsGo) {
  fb::MpiContext mpi(nullptr, nullptr);
  {
    const RunDirLock lock(dir, mpi, 0);
    const auto holder = run_dir_holder(dir);
    ASSERT_TRUE(holder.has_value());
    EXPECT_EQ(*holder, "pid " + std::to_string(::getpid()) + " on " + mpi.hostname());
    try {
      const RunDirLock second(dir, mpi, 0);
      FAIL() << "a second job took the run dir";
    } catch (const fb::Error& e) {
      EXPECT_EQ(std::string(e.what()), fb::resilience::run_dir_in_use_message(dir, *holder));
    }
  }
  EXPECT_EQ(run_dir_holder(dir), std::nullopt);  // released with the job
}

TEST_F(RunDirLockTest, AJobWaitsForTheLockOfOneThatIsEnding) {
  auto ending = std::make_unique<HeldLock>(dir / ".lock", LOCK_EX, "pid 1 on node-b\n");
  std::thread ends([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ending->release();
  });
  fb::MpiContext mpi(nullptr, nullptr);
  EXPECT_NO_THROW({ const RunDirLock lock(dir, mpi, 10); });
  ends.join();
}

TEST_F(RunDirLockTest, AJobInASupervisorsRunDirLetsGoOfItsOwnLocks) {
  // A train run alone in a run dir whose supervisor holds it (between two of its attempts): refused, naming
  // the supervisor, and the locks it took first (its own, then the supervisor's check) are let go, so the
  // supervisor's next attempt finds the run dir free.
  auto supervisor = std::make_unique<HeldLock>(dir / ".supervisor.lock", LOCK_EX, "pid 77 on node-c\n");
  fb::MpiContext mpi(nullptr, nullptr);
  try {
    const RunDirLock lock(dir, mpi, 0.3);
    FAIL() << "a job took a supervisor's run dir";
  } catch (const fb::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              fb::resilience::run_dir_in_use_message(dir, "the supervisor pid 77 on node-c"));
  }
  const HeldLock next_dir(dir, LOCK_EX);
  const HeldLock next_file(dir / ".lock", LOCK_EX);
  supervisor.reset();
}

TEST_F(RunDirLockTest, AJobTakesTheRunDirOnceItsSupervisorLetsGo) {
  auto supervisor = std::make_unique<HeldLock>(dir / ".supervisor.lock", LOCK_EX, "pid 77 on node-c\n");
  std::thread ends([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    supervisor->release();
  });
  fb::MpiContext mpi(nullptr, nullptr);
  EXPECT_NO_THROW({ const RunDirLock lock(dir, mpi, 10); });
  ends.join();
}
