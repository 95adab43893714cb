// The checkpoint-directory check of `health` (health_checks.hpp).
#include "workloads/health_checks.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "core/remove_on_signal.hpp"
#include "core/units.hpp"

namespace fb::workloads::health {

using nlohmann::json;
using reports::Better;
using reports::Metric;

namespace {

// The test hook's read-only directory: a fresh 0555 directory, or /sys when running as root, whom
// permission bits do not stop (sysfs refuses to create files for anyone).
std::filesystem::path readonly_directory(bool& remove_after) {
  remove_after = false;
  if (geteuid() == 0) return "/sys";
  auto dir = std::filesystem::temp_directory_path() / fmt::format("factorybench-readonly-{}", getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                   std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                   std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  remove_after = true;
  return dir;
}

std::optional<double> free_bytes(const std::filesystem::path& dir) {
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
  return static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
}

}  // namespace

void read_checkpoint_dir_space(Context& c) {
  c.checkpoint_free_bytes = free_bytes(c.options.checkpoint_dir);
}

CheckOutcome check_checkpoint_dir(Context& c) {
  std::filesystem::path dir = c.options.checkpoint_dir;
  std::string label = fmt::format("checkpoint dir '{}'", dir.string());
  bool remove_after = false;
  if (c.options.readonly_checkpoint_rank == c.mpi.rank()) {
    dir = readonly_directory(remove_after);
    label = fmt::format("checkpoint dir '{}' (test hook FACTORYBENCH_TEST_READONLY_CKPT_RANK)", dir.string());
  }
  struct Cleanup {
    std::filesystem::path dir;
    bool remove;
    ~Cleanup() {
      if (!remove) return;
      std::error_code ec;
      std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{dir, remove_after};

  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return outcome("checkpoint_dir", Verdict::fail, label + " is not a directory");
  const std::uint64_t bytes =
      c.options.checkpoint_bytes ? c.options.checkpoint_bytes : c.backend.defaults().health.checkpoint_bytes;
  const auto host = c.mpi.hostname();
  const auto file = dir / fmt::format(".factorybench-health-{}-r{}-{}.tmp", host, c.mpi.rank(), getpid());
  const RemoveOnSignal remove_on_signal({file});  // an interrupted check leaves no scratch file behind
  const int fd = ::open(file.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0)
    return outcome("checkpoint_dir", Verdict::fail,
                   fmt::format("{} is not writable: cannot create {}: {}", label, file.filename().string(),
                               std::strerror(errno)));
  // Every rank of this host writes at once: together they must fit, with a tenth of the free space to spare.
  // The space as it was before any rank wrote (read_checkpoint_dir_space): read now, the scratch files its
  // neighbours are already writing would count against a rank that comes late.
  const auto before =
      remove_after || dir != c.options.checkpoint_dir ? free_bytes(dir) : c.checkpoint_free_bytes;
  if (before) {
    const double free = *before;
    const double need = static_cast<double>(bytes) * std::max(1, c.mpi.local_size());
    if (need > 0.9 * free) {
      ::close(fd);
      ::unlink(file.c_str());
      return outcome("checkpoint_dir", Verdict::fail,
                     fmt::format("{}: {} per rank x {} rank(s) on this host would not fit: {} free", label,
                                 format_bytes(bytes), std::max(1, c.mpi.local_size()),
                                 format_bytes(static_cast<std::uint64_t>(free))));
    }
  }
  // Random data, so a compressing or deduplicating file system does not flatter the figure.
  std::vector<std::uint64_t> chunk((std::min<std::uint64_t>(bytes, 4ull << 20) + 7) / 8);
  SplitMix64 rng(derive_seed(c.options.seed, 0xC4E0 + static_cast<std::uint64_t>(c.mpi.rank())));
  for (auto& w : chunk) w = rng.next();
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  // Flushed every 64 MiB as well as at the end, so the page cache does not hold gigabytes for one long final
  // fsync. The writing runs on a thread that blocks the signals RemoveOnSignal guards: a SIGTERM (a
  // scheduler's, forwarded by mpirun) is taken by this thread at once, the scratch file removed, even while
  // the writer sits uninterruptibly in fdatasync; mpirun's SIGKILL a second later used to come first and
  // leave the file behind.
  constexpr std::uint64_t kFlushEvery = 64ull << 20;
  run_with_signals_blocked([&] {
    std::uint64_t flushed = 0;
    for (std::uint64_t done = 0; done < bytes && error.empty();) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes - done, chunk.size() * 8));
      const ssize_t w = ::write(fd, chunk.data(), n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error = fmt::format("write failed after {}: {}", format_bytes(done), std::strerror(errno));
      } else {
        done += static_cast<std::uint64_t>(w);
        if (done - flushed >= kFlushEvery) {
          if (::fdatasync(fd) != 0) error = fmt::format("fdatasync failed: {}", std::strerror(errno));
          flushed = done;
        }
      }
    }
    if (error.empty() && ::fsync(fd) != 0) error = fmt::format("fsync failed: {}", std::strerror(errno));
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  ::unlink(file.c_str());
  if (!error.empty()) return outcome("checkpoint_dir", Verdict::fail, label + ": " + error);
  const double gbps = static_cast<double>(bytes) / seconds / 1e9;
  CheckOutcome o =
      outcome("checkpoint_dir", Verdict::pass,
              fmt::format("{}: {} written and fsync'ed at {:.2f} GB/s", label, format_bytes(bytes), gbps));
  o.metrics.emplace_back("write_gbps", metric(gbps, "GB/s", Better::higher));
  o.metrics.emplace_back("write_bytes", metric(static_cast<double>(bytes), "bytes", Better::none));
  if (const auto after = free_bytes(dir))
    o.metrics.emplace_back("free_bytes", metric(*after, "bytes", Better::higher));
  return o;
}

}  // namespace fb::workloads::health
