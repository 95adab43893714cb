#include "resilience/run_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rank_collectives.hpp"

namespace fb::resilience {
namespace {

// The holder's "pid P on HOST" as it wrote it (best effort: the lock, not this text, is what excludes).
std::string holder_of(int fd) {
  char text[256] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string s = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() ? "another job" : s;
}

// True when a holder's exclusive lock is on `fd`. The probe asks for a shared lock: probes of the same run
// dir at once (every rank of a job checks it before rank 0 locks it) must not read each other as the holder,
// as exclusive probes did ("in use by another job", at random, on a fresh run dir).
bool held_by_another(int fd) {
  return fd >= 0 && ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

// "the supervisor pid P on HOST" while a resilience supervisor holds dir/.supervisor.lock; else nullopt.
std::optional<std::string> supervisor_holder(const std::filesystem::path& dir) {
  const int sup = ::open((dir / ".supervisor.lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (sup < 0) return std::nullopt;
  std::optional<std::string> holder;
  if (held_by_another(sup)) holder = "the supervisor " + holder_of(sup);
  ::close(sup);  // (releases what this check took)
  return holder;
}

}  // namespace

// FACTORYBENCH_RUN_DIR_LOCK_WAIT in seconds; a value that is not one is named, not silently replaced by the
// default (a typo would otherwise make a relaunch give up at once, or wait 10 s it was told not to).
double run_dir_lock_wait(double fallback) {
  const char* v = std::getenv("FACTORYBENCH_RUN_DIR_LOCK_WAIT");
  if (!v || !*v) return fallback;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || errno == ERANGE || !(s >= 0 && s <= 86400))
    throw usage_error(
        fmt::format("invalid FACTORYBENCH_RUN_DIR_LOCK_WAIT '{}': expected seconds to wait for the run dir's "
                    "lock, 0 to 86400",
                    v));
  return s;
}

namespace {

// "pid P on HOST" (or "another job") while a training job holds dir's own lock or dir/.lock; else nullopt.
std::optional<std::string> job_holder(const std::filesystem::path& dir) {
  std::optional<std::string> holder;
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return holder;  // no run dir yet: nobody holds it
  const int fd = ::open((dir / ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (held_by_another(dir_fd) || held_by_another(fd))
    holder = fd >= 0 ? holder_of(fd) : std::string("another job");
  for (const int f : {fd, dir_fd})  // (releases what this check took)
    if (f >= 0) ::close(f);
  return holder;
}

}  // namespace

std::optional<std::string> run_dir_holder(const std::filesystem::path& dir) {
  const auto job = job_holder(dir);
  return job ? job : supervisor_holder(dir);
}

SupervisorRunDirLock::SupervisorRunDirLock(const std::filesystem::path& dir) {
  if (const auto holder = run_dir_holder(dir)) throw usage_error(run_dir_in_use_message(dir, *holder));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto path = dir / ".supervisor.lock";
  fd_ = ec ? -1 : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;  // the training job's own lock still excludes a second job
  // A probe (run_dir_holder) holds a shared lock for a moment: a holder's lock stays past this short wait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int why = 0;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    why = errno;
    if ((why != EWOULDBLOCK && why != EINTR) || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    why = 0;
  }
  if (why != 0) {
    const bool held = why == EWOULDBLOCK || why == EINTR;
    const std::string holder = held ? "the supervisor " + holder_of(fd_) : std::string();
    ::close(fd_);
    fd_ = -1;
    if (held) throw usage_error(run_dir_in_use_message(dir, holder));
    return;  // a file system without flock: as above
  }
  // A training job that locked the run dir between the check above and this lock: each side locks its own
  // file, then checks the other's (RunDirLock), so of two starting at once at least one sees the other.
  if (const auto holder = job_holder(dir)) {
    ::close(fd_);
    fd_ = -1;
    throw usage_error(run_dir_in_use_message(dir, *holder));
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const auto me = fmt::format("pid {} on {}\n", ::getpid(), host);
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) < 0) { /* text only */
  }
}

SupervisorRunDirLock::~SupervisorRunDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

bool is_run_dir_file(const std::filesystem::path& dir, const std::filesystem::path& path) {
  std::error_code ec;
  const auto base = std::filesystem::weakly_canonical(dir, ec);
  if (ec) return false;
  const auto p = std::filesystem::weakly_canonical(path, ec);
  if (ec) return false;
  const auto rel = p.lexically_relative(base);
  if (rel.empty() || *rel.begin() == ".." || rel == ".") return false;
  const std::string first = rel.begin()->string();
  static const std::set<std::string> kKept = {"events.jsonl",   "faults.fired", ".lock", ".supervisor.lock",
                                              "checkpoints",    "heartbeat",    "calls", "drain-request",
                                              "placement.json", "none",         "drain"};
  if (kKept.count(first)) return true;
  return first.starts_with("attempt-") || first.starts_with("fb-hang-") || first.starts_with("preflight-");
}

std::string run_dir_in_use_message(const std::filesystem::path& dir, const std::string& holder) {
  // The lock the holder has: a supervisor's own (between its attempts, or during a pre-flight check) or the
  // training job's.
  const char* lock = holder.starts_with("the supervisor") ? ".supervisor.lock" : ".lock";
  return fmt::format("--run-dir {} is in use by {} (its lock {}): stop that job, or choose another --run-dir",
                     dir.string(), holder, (dir / lock).string());
}

RunDirLock::RunDirLock(const std::filesystem::path& dir, MpiContext& mpi, double wait_s) {
  std::string error;
  if (mpi.is_root()) {
    double wait = wait_s;
    try {
      wait = run_dir_lock_wait(wait_s);  // before anything is made in the run dir
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::error_code ec;
    const auto path = dir / ".lock";
    if (error.empty()) {
      std::filesystem::create_directories(dir, ec);
      fd_ = ec ? -1 : ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      dir_fd_ = ec ? -1 : ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (!error.empty()) {
      // the lock wait's own error: nothing was made
    } else if (ec) {
      // The reason it cannot be made (a read-only volume, no permission), not the missing lock file's.
      error = fmt::format("--run-dir {}: cannot create it: {}", dir.string(), ec.message());
    } else if (fd_ < 0) {
      error =
          fmt::format("--run-dir {}: cannot open {}: {}", dir.string(), path.string(), std::strerror(errno));
    } else {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait);
      // The directory's own lock comes first: the lock file can be deleted (a cleanup of dot files, a
      // user who thinks it stale), and a second job would then lock a new file beside the first one's.
      // Where directories cannot be locked (NFS takes flock as a byte-range lock, which needs a file
      // open for writing), the lock file alone excludes.
      const auto dir_busy = [&] {
        if (dir_fd_ < 0 || ::flock(dir_fd_, LOCK_EX | LOCK_NB) == 0) return false;
        if (errno == EWOULDBLOCK || errno == EINTR) return true;
        ::close(dir_fd_);
        dir_fd_ = -1;
        return false;
      };
      // A supervisor's run dir (its .supervisor.lock held) belongs to the jobs it launches, which it marks
      // with FB_SUPERVISED; another train run there, between two of its attempts, would have the next
      // attempt stop on this lock.
      std::optional<std::string> supervisor;
      const auto supervised_elsewhere = [&] {
        supervisor = std::getenv("FB_SUPERVISED") ? std::nullopt : supervisor_holder(dir);
        if (supervisor) errno = EWOULDBLOCK;
        return supervisor.has_value();
      };
      // Its own locks first, then the supervisor's: a supervisor locks its file, then checks this job's
      // (SupervisorRunDirLock), so of two starting at once at least one sees the other and lets go.
      const auto take = [&] {
        supervisor.reset();
        if (dir_busy() || ::flock(fd_, LOCK_EX | LOCK_NB) != 0) return false;
        if (!supervised_elsewhere()) return true;
        ::flock(fd_, LOCK_UN);
        if (dir_fd_ >= 0) ::flock(dir_fd_, LOCK_UN);
        errno = EWOULDBLOCK;
        return false;
      };
      while (!take()) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
          error = fmt::format("--run-dir {}: cannot lock {}: {}", dir.string(), path.string(),
                              std::strerror(errno));
          break;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
          error = run_dir_in_use_message(dir, supervisor ? *supervisor : holder_of(fd_));
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (error.empty()) {
        const auto me = fmt::format("pid {} on {}\n", ::getpid(), mpi.hostname());
        if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) < 0) { /* text only */
        }
      } else {
        ::close(fd_);
        fd_ = -1;
        if (dir_fd_ >= 0) ::close(dir_fd_);
        dir_fd_ = -1;
      }
    }
  }
  // Every rank stops alike, with rank 0's reason.
  int ok = error.empty() ? 1 : 0;
  broadcast(mpi, ok);
  if (!ok) {
    if (mpi.is_root()) throw usage_error(error);
    throw usage_error(fmt::format("--run-dir {}: rank 0 could not take the run dir's lock", dir.string()));
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the locks
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

}  // namespace fb::resilience
