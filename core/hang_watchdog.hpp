#pragma once
// Hang localization (issue 17): a watchdog thread per rank watches the rank's CallLog (core/call_log.hpp).
// Every period it writes the rank's state (last call entered and left, op, bytes) to <dir>/rank-R.state,
// a side channel that needs no communicator. When a call of this rank has not completed within the
// timeout, the watchdog reads every rank's file and says which ranks never entered the call their peers
// wait in, and which entered and never left:
//   "rank 5 (host X, GPU 3) never entered allreduce #123 (2 MiB)"
// The lowest stuck rank hands these lines to the callback (it prints them) and every stuck rank then
// ends its process with exit status 1, so the launcher tears the job down instead of waiting forever.
// A rank that writes the job's report (rank 0, which alone holds a suite's earlier steps) may be the one
// that hangs, or simply not stuck: it registers a peer callback, the reporter leaves the diagnosis in
// <dir>/hang.diagnosis, and waits (a few periods, longer once that rank has begun) for that rank to write
// before the job is torn down; it writes a report of its own only where that rank wrote none.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/call_log.hpp"
#include "core/remove_on_signal.hpp"

namespace fb {

struct RankCallRecord {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  CallState call;        // entered_at_s unused here
  double in_call_s = 0;  // how long the current call has run (0 when not in one)
  bool done = false;     // the rank finished its work (the watchdog stopped)
  double age_s = 0;      // how long ago the rank last published it (read_call_states: the file's age)
};

// Every live rank republishes its state at least once a second; one silent for this long is frozen
// (SIGSTOP, swapped out, stuck in the kernel), and its last state is history, not the present.
inline constexpr double kStaleStateS = 5.0;

// One line of text and back ("rank host local entered left op bytes in_call_s done"); parse returns
// nullopt for a malformed or partial line.
std::string format_record(const RankCallRecord& r);
std::optional<RankCallRecord> parse_record(const std::string& line);

// The ranks stuck longer than `timeout_s` inside a call, and the ranks that never entered the call their
// peers wait in (not in a call, or finished). A rank in the same call as one stuck past the timeout counts
// as stuck however long it has waited. A rank whose state is older than kStaleStateS (not finished) comes
// first, as frozen: the others wait for it whatever its last state said. Empty when no rank is stuck or
// frozen. Pure.
std::vector<std::string> diagnose_hang(const std::vector<RankCallRecord>& ranks, double timeout_s);
// The ranks whose state is older than kStaleStateS and that had not finished: frozen. Pure.
std::vector<int> frozen_ranks(const std::vector<RankCallRecord>& ranks);

// The side channel alone, for callers with a watchdog of their own (train's step watchdog): publish this
// rank's call state to <dir>/rank-R.state (write beside, rename: readers never see half a line), and read
// every rank's (ranks without a readable file are left out).
void publish_call_state(const std::filesystem::path& dir, const RankCallRecord& identity, bool done);
// The file publish_call_state writes for `rank` (its modification time is the watchdog's pulse).
std::filesystem::path call_state_file(const std::filesystem::path& dir, int rank);
std::vector<RankCallRecord> read_call_states(const std::filesystem::path& dir, int world_size);

// Whether this caller is the first to claim the hang report of the job whose states are in `dir`
// (creates <dir>/hang.reported exclusively): exactly one rank prints the diagnosis.
bool claim_hang_report(const std::filesystem::path& dir);

class HangWatchdog {
 public:
  using OnHang = std::function<void(const std::vector<std::string>& lines)>;
  // `dir` must be shared by every rank (created if missing). timeout_s > 0. `on_peer_hang` (may be empty):
  // called on this rank's watchdog thread with another rank's diagnosis, once, when this rank writes the
  // report that the reporting rank cannot (see above). `on_unwritten` (may be empty): called on the
  // reporting rank after `on_hang` when no other rank is the writer, or the writer did not write within ten
  // periods (it cannot run): the reporter's own report then, and never beside the writer's.
  HangWatchdog(std::filesystem::path dir, RankCallRecord identity, int world_size, double timeout_s,
               OnHang on_hang, OnHang on_peer_hang = {}, OnHang on_unwritten = {});
  ~HangWatchdog();  // marks this rank done and stops the thread
  HangWatchdog(const HangWatchdog&) = delete;
  HangWatchdog& operator=(const HangWatchdog&) = delete;

 private:
  void loop();
  void write_state(bool done);
  void take_peer_report();  // on_peer_hang_ with the diagnosis, when there is one and it was not taken yet

  std::filesystem::path dir_;
  RankCallRecord identity_;
  int world_size_;
  double timeout_s_;
  OnHang on_hang_, on_peer_hang_, on_unwritten_;
  bool peer_report_taken_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
  std::unique_ptr<RemoveOnSignal> cleanup_;
};

}  // namespace fb
