#include "tools/command_hang_watchdog.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/units.hpp"

#include "reports/locate_console.hpp"
#include "reports/locate_extra.hpp"
#include "reports/report_json.hpp"
#include "tools/interrupt_report.hpp"
#include "workloads/run_environment.hpp"

namespace fb::tools {
namespace {

// Open MPI ends a job it is told to stop (Ctrl-C to mpirun) by SIGKILL a second after SIGTERM, often before
// the ranks have removed their state files: such directories would pile up in the run dir. A run's directory
// that holds only state files (no diagnosed hang: hang.reported stays for its reader) none of which was
// written for 10 minutes is such a leftover (a live job rewrites its file every second), and is removed.
// The directory's own time counts too: another rank of this job (or of a job starting beside it) may have
// just made its directory, still empty, and an empty directory has no file to say it is fresh.
void sweep_stale_hang_dirs(const std::filesystem::path& run_dir, const std::filesystem::path& own) {
  using namespace std::chrono_literals;
  const auto now = std::filesystem::file_time_type::clock::now();
  const auto leftover = [&](const std::filesystem::path& dir) {
    if (dir.filename() == own.filename() || now - std::filesystem::last_write_time(dir) < 10min) return false;
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
      const auto name = f.path().filename().string();
      const bool state = (name.starts_with("rank-") || name.starts_with(".rank-")) &&
                         name.find(".state") != std::string::npos;
      if (!(state || name == "hang.peer-writer") || now - f.last_write_time() < 10min) return false;
    }
    return true;
  };
  try {  // best effort: a directory another process changes meanwhile is left alone
    for (const auto& entry : std::filesystem::directory_iterator(run_dir))
      if (entry.path().filename().string().starts_with("fb-hang-") && entry.is_directory() &&
          leftover(entry.path()))
        std::filesystem::remove_all(entry.path());
  } catch (const std::filesystem::filesystem_error&) {
  }
}

}  // namespace

double parse_command_hang_timeout(const std::string& text) {
  const double s = parse_duration(text, "--hang-timeout");
  if (s > 0 && s < 1)
    throw usage_error(
        fmt::format("invalid --hang-timeout '{}': 0 (off) or at least 1s; a shorter limit takes an ordinary "
                    "collective for "
                    "a hang",
                    text));
  // An injected hang is found by the watchdog alone: with it off the job would wait until killed.
  if (s == 0 && injected_faults().hang_rank >= 0)
    throw usage_error(
        fmt::format("FACTORYBENCH_INJECT '{}': a hang with --hang-timeout 0 (the watchdog "
                    "off) would wait until the job is killed; give a timeout",
                    injected_faults().text));
  return s;
}

double parse_command_hang_timeout(const std::string& text, bool run_dir_given) {
  const double s = parse_command_hang_timeout(text);
  if (run_dir_given && s == 0)
    throw usage_error(
        "--run-dir holds the hang watchdog's state files: it does nothing with --hang-timeout 0");
  return s;
}

namespace {

// check_hang_run_dir's check on this rank.
void hang_run_dir_check(const std::string& run_dir) {
  const auto refuse = [&](const std::string& why) {
    return usage_error(fmt::format("invalid --run-dir {}: {} (the hang watchdog keeps its state files there)",
                                   run_dir, why));
  };
  // The watchdog creates what is missing of the path: the nearest part that exists must be a directory it
  // can write in.
  std::filesystem::path probe = std::filesystem::path(run_dir).lexically_normal();
  if (probe.empty()) probe = ".";
  struct stat st {};
  while (::stat(probe.c_str(), &st) != 0) {
    if (errno != ENOENT && errno != ENOTDIR)
      throw refuse(fmt::format("{}: {}", probe.string(), std::strerror(errno)));
    auto up = probe.parent_path();
    if (up.empty()) up = ".";
    if (up == probe) throw refuse(fmt::format("{}: {}", probe.string(), std::strerror(ENOENT)));
    probe = up;
  }
  if (!S_ISDIR(st.st_mode)) throw refuse(fmt::format("{} is not a directory", probe.string()));
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    throw refuse(fmt::format("cannot write in {}: {}", probe.string(), std::strerror(errno)));
}

}  // namespace

void check_hang_run_dir(Session& session, const std::string& run_dir, double timeout_s) {
  if (timeout_s <= 0) return;
  session.on_every_rank([&] {
    hang_run_dir_check(run_dir);
    return true;
  });
}

void add_hang_watchdog_options(CLI::App& sub, std::string& hang_timeout, std::string& run_dir,
                               std::string_view ends) {
  sub.add_option(
         "--hang-timeout", hang_timeout,
         fmt::format("End {} (exit 1) naming the ranks that never entered, or never left, a collective "
                     "that ran this long (0 = off)",
                     ends))
      ->capture_default_str();
  sub.add_option("--run-dir", run_dir,
                 "Shared directory for the hang watchdog's per-rank state files (fb-hang-<run id>/, removed "
                 "after a run without hang)")
      ->capture_default_str();
}

CommandHangWatchdog::CommandHangWatchdog(const MpiContext& mpi, std::string command,
                                         const std::string& run_id, Session::HangReport report_on_hang,
                                         std::string output, const std::filesystem::path& run_dir,
                                         double timeout_s, std::function<void()> finish_console)
    : mpi_(mpi), dir_(run_dir / ("fb-hang-" + run_id)) {
  if (timeout_s <= 0) return;
  // --run-dir is the user's: one that cannot hold the state files is a usage error, on every rank alike
  // (the watchdog's own "cannot create" was a runtime failure, exit 3).
  {
    std::error_code ec;
    auto top = run_dir.lexically_normal();
    if (top.has_parent_path() && !top.has_filename()) top = top.parent_path();  // "a/b/": "a/b"
    for (auto p = top; !p.empty() && p != p.root_path() && !std::filesystem::exists(p, ec);
         p = p.parent_path())
      made_.push_back(p);
    if (mpi.is_root() && made_.empty()) sweep_stale_hang_dirs(run_dir, dir_);
    std::filesystem::create_directories(dir_, ec);
    if (!mpi.all_true(!ec))
      throw usage_error(fmt::format(
          "invalid --run-dir {}: cannot create {} for the hang watchdog's state files{}", run_dir.string(),
          dir_.filename().string(), ec ? ": " + ec.message() : std::string(" on another rank")));
  }
  RankCallRecord me;
  me.rank = mpi.rank();
  me.host = mpi.hostname();
  me.local_rank = mpi.local_rank();
  // The failed "hang" result, and the report -o gets with it (when this rank has one to write).
  auto result = [command = std::move(command), dir = dir_](const std::vector<std::string>& found) {
    std::string msg;
    for (const auto& l : found) msg += (msg.empty() ? "" : "; ") + l;
    reports::Result r;
    r.benchmark = command;
    r.name = "hang";
    r.params = {{"test", "hang"}, {"run_dir", dir.string()}};
    reports::write_hang_extra(r, {found});
    r.fail(msg);
    return r;
  };
  const bool has_output = !output.empty();
  // On the watchdog thread, as the job ends: a report that cannot be written is said, not thrown (which
  // would end the process before the diagnosis is out).
  auto write = [report_on_hang = std::move(report_on_hang),
                output = std::move(output)](const reports::Result& hang) {
    InterruptReport::stand_down();  // the SIGTERM that ends the job after this keeps this report
    if (output.empty()) return;
    try {
      if (auto report = report_on_hang(hang)) {
        report->run["finished_at"] = workloads::utc_timestamp();
        reports::write_report(output, *report);
        log::info("report written to {}", output);
      }
    } catch (const std::exception& e) {
      std::cerr << "hang: the report was not written: " << e.what() << "\n";
    }
  };
  if (!mpi.is_root()) finish_console = nullptr;
  // The rank that diagnoses the hang prints it; rank 0 writes the report (below), another rank only when
  // rank 0 could not (HangWatchdog's on_unwritten).
  const bool root = mpi.is_root();
  auto on_hang = [result, write, finish_console, root](const std::vector<std::string>& found) {
    InterruptReport::stand_down();  // as write does: the SIGTERM that ends the job is the hang's
    const auto r = result(found);
    if (finish_console) finish_console();
    reports::print_hang(std::cout, r);
    std::cout.flush();
    if (root) write(r);
  };
  HangWatchdog::OnHang on_unwritten;
  if (!root) on_unwritten = [result, write](const std::vector<std::string>& found) { write(result(found)); };
  // Rank 0 holds what the report needs (a suite's earlier steps): when another rank diagnoses the hang,
  // rank 0 writes the report with it, whether it is stuck itself or not. Without -o it has nothing to write,
  // and the reporter does not wait for it.
  HangWatchdog::OnHang on_peer_hang;
  if (mpi.is_root() && has_output)
    on_peer_hang = [result, write, finish_console](const std::vector<std::string>& found) {
      if (finish_console) finish_console();
      write(result(found));
    };
  watchdog_ = std::make_unique<HangWatchdog>(dir_, me, mpi.size(), timeout_s, std::move(on_hang),
                                             std::move(on_peer_hang), std::move(on_unwritten));
}

CommandHangWatchdog::~CommandHangWatchdog() {
  if (!watchdog_) return;
  watchdog_.reset();
  std::error_code ec;
  std::filesystem::remove(call_state_file(dir_, mpi_.rank()), ec);
  std::filesystem::remove(dir_, ec);  // only when empty: another rank's file, or a hang's, keeps it
  remove_made();
}

void CommandHangWatchdog::remove_made() const {
  // remove() takes an empty directory only: one another rank (or anything else) still uses stops it. One
  // already gone (another rank on this host removed it first) is no reason to stop.
  for (const auto& p : made_) {
    std::error_code ec;
    std::filesystem::remove(p, ec);
    if (ec) break;
  }
}

void CommandHangWatchdog::finish() {
  if (!watchdog_) return;
  watchdog_.reset();
  mpi_.barrier();
  std::error_code ec;
  if (mpi_.is_root()) std::filesystem::remove_all(dir_, ec);
  // A --run-dir this run made (and the parents it made for it) is not left behind, empty.
  mpi_.barrier();
  remove_made();
}

}  // namespace fb::tools
