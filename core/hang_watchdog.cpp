#include "core/hang_watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace fb {
namespace {

// The claim that one rank alone prints the diagnosis, and its "printed" mark that lets the others exit.
constexpr const char* kClaimFile = "hang.reported";
constexpr const char* kDoneFile = "hang.done";
// The reporter's diagnosis for the rank that writes the report (named in kPeerWriterFile), and that rank's
// mark that it has written.
constexpr const char* kDiagnosisFile = "hang.diagnosis";
constexpr const char* kPeerWriterFile = "hang.peer-writer";
constexpr const char* kPeerDoneFile = "hang.peer-done";
// The writer's mark that it has begun: a reporter that sees it waits longer for the report (an fsync on a
// loaded disk can take seconds) rather than write its own beside it.
constexpr const char* kPeerWritingFile = "hang.peer-writing";

// Written whole or not at all (core/atomic_file.hpp): a reader never sees half of it. On the watchdog thread,
// where nothing may throw: a file not written is a wait that times out.
void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const GuardedFileWrite guard;  // the peer-writer file is one a signal removes
  if (!guard.allowed()) return;
  try {
    write_file_atomic(path, text);
  } catch (...) {
  }
}

std::filesystem::path state_file(const std::filesystem::path& dir, int rank) {
  return dir / fmt::format("rank-{}.state", rank);
}
std::filesystem::path state_tmp_file(const std::filesystem::path& dir, int rank) {
  return dir / fmt::format(".rank-{}.state.tmp", rank);
}

std::string call_text(const std::string& op, std::uint64_t seq, std::uint64_t bytes) {
  return fmt::format("{} #{} ({})", op, seq, format_bytes(bytes));
}

std::string who(const RankCallRecord& r) {
  return fmt::format("rank {} (host {}, GPU {})", r.rank, r.host, r.local_rank);
}

}  // namespace

std::string format_record(const RankCallRecord& r) {
  return fmt::format("{} {} {} {} {} {} {} {:.3f} {} {} {}\n", r.rank, r.host, r.local_rank, r.call.entered,
                     r.call.left, r.call.op.empty() ? "-" : r.call.op, r.call.bytes, r.in_call_s,
                     r.done ? 1 : 0, r.call.waiting.empty() ? "-" : r.call.waiting, r.call.peer);
}

std::optional<RankCallRecord> parse_record(const std::string& line) {
  std::istringstream in(line);
  RankCallRecord r;
  int done = 0;
  if (!(in >> r.rank >> r.host >> r.local_rank >> r.call.entered >> r.call.left >> r.call.op >>
        r.call.bytes >> r.in_call_s >> done >> r.call.waiting))
    return std::nullopt;
  if (!(in >> r.call.peer)) r.call.peer = -1;  // a collective's line may end before it (older writers)
  if (r.call.op == "-") r.call.op.clear();
  if (r.call.waiting == "-") r.call.waiting.clear();
  r.done = done != 0;
  return r;
}

std::vector<int> frozen_ranks(const std::vector<RankCallRecord>& ranks) {
  std::vector<int> out;
  for (const auto& r : ranks)
    if (!r.done && r.age_s >= kStaleStateS) out.push_back(r.rank);
  return out;
}

std::vector<std::string> diagnose_hang(const std::vector<RankCallRecord>& ranks, double timeout_s) {
  // Frozen first: a rank that stopped publishing is the likeliest culprit, and its last state (in a call,
  // between calls) says where it stopped, not what it waits for.
  const auto frozen = [](const RankCallRecord& r) { return !r.done && r.age_s >= kStaleStateS; };
  std::vector<std::string> lines;
  for (const auto& r : ranks)
    if (frozen(r))
      lines.push_back(fmt::format(
          "{} stopped responding: its state is {} old (frozen: stopped, swapped out or stuck in the kernel); "
          "last seen {}",
          who(r), format_duration(r.age_s),
          r.call.entered > r.call.left ? "in " + call_text(r.call.op, r.call.entered, r.call.bytes)
                                       : fmt::format("after call #{}", r.call.left)));
  // Stuck: in a call past the timeout, or in the very call (op, number) of a rank that is. A peer that
  // entered that call later, or whose state file is a period older, waits in it all the same.
  const auto in_call = [&](const RankCallRecord& r) {
    return r.call.entered > r.call.left && !r.done && !frozen(r);
  };
  std::set<std::pair<std::string, std::uint64_t>> timed_out;
  for (const auto& r : ranks)
    if (in_call(r) && r.in_call_s >= timeout_s) timed_out.insert({r.call.op, r.call.entered});
  if (timed_out.empty()) return lines;
  std::vector<const RankCallRecord*> stuck, idle, elsewhere;
  for (const auto& r : ranks) {
    if (frozen(r)) continue;
    if (in_call(r) && (r.in_call_s >= timeout_s || timed_out.count({r.call.op, r.call.entered})))
      stuck.push_back(&r);
    else if (!r.done && r.call.entered == r.call.left && !r.call.waiting.empty())
      elsewhere.push_back(&r);  // waiting for the others between numbered calls: not a culprit
    else if (r.call.entered == r.call.left || r.done)
      idle.push_back(&r);
  }
  // The call the stuck ranks wait in: the most common (op, sequence number) among them.
  const auto most_common = [](const std::vector<const RankCallRecord*>& among) {
    std::map<std::pair<std::string, std::uint64_t>, int> votes;
    for (const auto* r : among) ++votes[{r->call.op, r->call.entered}];
    const auto top = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
                       return a.second < b.second;
                     })->first;
    std::uint64_t bytes = 0;
    for (const auto* r : among)
      if (r->call.op == top.first && r->call.entered == top.second) bytes = r->call.bytes;
    return std::pair{top.first, bytes};
  };
  const auto waited = most_common(stuck);
  // An idle rank never entered its next call. Ranks stuck in a call of that same number wait for it: a
  // collective's peers are in the same collective, a send's peer owes the recv (and a recv's the send).
  // Ranks of other numbers wait elsewhere (a barrier of the ranks a point-to-point test leaves out).
  // A point-to-point call names its peer: a rank stuck sending to (receiving from) an idle rank waits for
  // that rank's recv (send), whatever call number the two have reached (ranks left out of a round, waiting in
  // a barrier of the same number, would otherwise lend the idle rank their op).
  for (const auto* r : idle) {
    std::vector<const RankCallRecord*> partners, peers;
    for (const auto* s : stuck)
      if ((s->call.op == "send" || s->call.op == "recv") && s->call.peer == r->rank) partners.push_back(s);
    for (const auto* s : stuck)
      if (s->call.entered == r->call.left + 1) peers.push_back(s);
    if (!partners.empty()) peers = partners;
    auto [op, bytes] = peers.empty() ? waited : most_common(peers);
    if (!peers.empty() && op == "send")
      op = "recv";
    else if (!peers.empty() && op == "recv")
      op = "send";
    lines.push_back(fmt::format("{} never entered {}{}", who(*r), call_text(op, r->call.left + 1, bytes),
                                r->done ? " (it had finished)" : ""));
  }
  for (const auto* r : stuck)
    lines.push_back(fmt::format("{} entered {} and never left (waited {})", who(*r),
                                call_text(r->call.op, r->call.entered, r->call.bytes),
                                format_duration(r->in_call_s)));
  for (const auto* r : elsewhere)
    lines.push_back(fmt::format("{} waits in a job-wide {} after call #{} (for the ranks above)", who(*r),
                                r->call.waiting, r->call.left));
  return lines;
}

HangWatchdog::HangWatchdog(std::filesystem::path dir, RankCallRecord identity, int world_size,
                           double timeout_s, OnHang on_hang, OnHang on_peer_hang, OnHang on_unwritten)
    : dir_(std::move(dir)),
      identity_(std::move(identity)),
      world_size_(world_size),
      timeout_s_(timeout_s),
      on_hang_(std::move(on_hang)),
      on_peer_hang_(std::move(on_peer_hang)),
      on_unwritten_(std::move(on_unwritten)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw runtime_error("hang watchdog: cannot create '" + dir_.string() + "': " + ec.message());
  // Ctrl-C or the scheduler's SIGTERM takes this rank's state files along, and the directory with the last
  // rank's; a hang already claimed keeps them for its diagnosis.
  std::vector<std::filesystem::path> mine{state_file(dir_, identity_.rank),
                                          state_tmp_file(dir_, identity_.rank)};
  if (on_peer_hang_) mine.push_back(dir_ / kPeerWriterFile);
  cleanup_ = std::make_unique<RemoveOnSignal>(std::move(mine), dir_, dir_ / kClaimFile);
  write_state(false);
  if (on_peer_hang_) write_file_atomically(dir_ / kPeerWriterFile, fmt::format("{}\n", identity_.rank));
  thread_ = std::thread([this] { loop(); });
}

void HangWatchdog::take_peer_report() {
  if (!on_peer_hang_ || peer_report_taken_) return;
  std::ifstream in(dir_ / kDiagnosisFile);
  if (!in) return;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  peer_report_taken_ = true;
  std::ofstream(dir_ / kPeerWritingFile) << identity_.rank << "\n";
  on_peer_hang_(lines);
  std::fflush(nullptr);
  write_file_atomically(dir_ / kPeerDoneFile, fmt::format("{}\n", identity_.rank));
}

HangWatchdog::~HangWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  try {
    write_state(true);
  } catch (...) {
  }
  // No longer here to write a report: a reporter that finds no writer does not wait for one.
  std::error_code ec;
  if (on_peer_hang_) std::filesystem::remove(dir_ / kPeerWriterFile, ec);
}

std::filesystem::path call_state_file(const std::filesystem::path& dir, int rank) {
  return state_file(dir, rank);
}

void publish_call_state(const std::filesystem::path& dir, const RankCallRecord& identity, bool done) {
  RankCallRecord r = identity;
  r.call = CallLog::instance().snapshot();
  r.in_call_s = r.call.entered > r.call.left ? steady_seconds() - r.call.entered_at_s : 0;
  r.done = done;
  const auto path = state_file(dir, r.rank);
  const auto tmp = state_tmp_file(dir, r.rank);
  const GuardedFileWrite guard;  // a signal's handler removes both: not while they are being replaced
  if (!guard.allowed()) return;
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << format_record(r);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
}

std::vector<RankCallRecord> read_call_states(const std::filesystem::path& dir, int world_size) {
  std::vector<RankCallRecord> out;
  const auto now = std::filesystem::file_time_type::clock::now();
  for (int r = 0; r < world_size; ++r) {
    const auto path = state_file(dir, r);
    std::ifstream in(path);
    std::string line;
    if (std::getline(in, line))
      if (auto rec = parse_record(line)) {
        std::error_code ec;
        const auto written = std::filesystem::last_write_time(path, ec);
        if (!ec) rec->age_s = std::max(0.0, std::chrono::duration<double>(now - written).count());
        out.push_back(*rec);
      }
  }
  return out;
}

bool claim_hang_report(const std::filesystem::path& dir) {
  const auto path = dir / kClaimFile;
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

void HangWatchdog::write_state(bool done) {
  publish_call_state(dir_, identity_, done);
}

void HangWatchdog::loop() {
  const double period = std::clamp(timeout_s_ / 4, 0.05, 1.0);
  std::unique_lock lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::duration<double>(period));
    if (stop_) break;
    write_state(false);
    take_peer_report();  // another rank found a hang: write the report this rank holds
    const auto mine = CallLog::instance().snapshot();
    if (!(mine.entered > mine.left && steady_seconds() - mine.entered_at_s >= timeout_s_)) continue;
    // Stuck: give every rank two periods to publish a fresh state, then read them all.
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::duration<double>(2.5 * period));
    // A call that ended meanwhile was slow, not stuck: no diagnosis of a job that moves.
    if (const auto now = CallLog::instance().snapshot();
        now.entered != mine.entered || now.left != mine.left) {
      lock.lock();
      continue;
    }
    write_state(false);
    auto all = read_call_states(dir_, world_size_);
    int reporter = identity_.rank;
    for (const auto& r : all)
      if (r.call.entered > r.call.left && r.in_call_s >= timeout_s_) reporter = std::min(reporter, r.rank);
    // The lowest stuck rank reports. Ranks that read the files a period apart can disagree on who that
    // is, so the report is claimed (one rank alone prints it), and a rank that is not the lowest in its
    // view still reports if nobody has claimed the report after a few periods (the lowest may be slow).
    const auto claimed = dir_ / kClaimFile;
    const auto reported = dir_ / kDoneFile;
    const auto wait_for = [&](const std::filesystem::path& file, double seconds) {
      std::error_code ec;
      for (double t = 0; t < seconds && !std::filesystem::exists(file, ec); t += period / 4)
        std::this_thread::sleep_for(std::chrono::duration<double>(period / 4));
    };
    if (reporter != identity_.rank) {
      wait_for(claimed, 6 * period);
      std::error_code ec;
      if (!std::filesystem::exists(claimed, ec)) {
        write_state(false);
        all = read_call_states(dir_, world_size_);
      }
    }
    if (on_hang_ && claim_hang_report(dir_)) {
      const auto lines = diagnose_hang(all, timeout_s_);
      std::string text;
      for (const auto& l : lines) text += l + "\n";
      write_file_atomically(dir_ / kDiagnosisFile, text);
      on_hang_(lines);
      std::fflush(nullptr);
      // The rank that writes the report, when it is another: give it the time to read the diagnosis and
      // write (it looks every period) before the exits below tear the job down. A rank that is itself
      // stuck takes it in the branch below; one that cannot run at all (stopped) costs the wait.
      int writer = -1;
      std::ifstream(dir_ / kPeerWriterFile) >> writer;
      std::error_code ec;
      if (writer >= 0 && writer != identity_.rank) {
        wait_for(dir_ / kPeerDoneFile, 10 * period);
        if (std::filesystem::exists(dir_ / kPeerWritingFile, ec))
          wait_for(dir_ / kPeerDoneFile, 120 * period);
      }
      // One writer of the report: the reporter's own only where the writer's did not come (two writers
      // renamed their reports onto one path, the last one winning).
      if (on_unwritten_ && writer != identity_.rank && !std::filesystem::exists(dir_ / kPeerDoneFile, ec)) {
        on_unwritten_(lines);
        std::fflush(nullptr);
      }
      std::ofstream(reported) << identity_.rank << "\n";
    } else {
      // The rank that writes the report, stuck too: it writes once the reporter has diagnosed.
      if (on_peer_hang_) {
        wait_for(dir_ / kDiagnosisFile, 20 * period);
        take_peer_report();
      }
      // Exiting tears the job down (the launcher kills the rest): wait for the reporter to finish first.
      wait_for(reported, 20 * period);
    }
    std::fflush(nullptr);
    std::_Exit(1);
  }
}

}  // namespace fb
