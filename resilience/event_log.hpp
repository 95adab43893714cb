#pragma once
// The resilience event log: append-only JSON Lines (`RUN_DIR/events.jsonl`), one object per line, written
// with one write(2) per event on an O_APPEND descriptor (so lines from the supervisor and the ranks never
// interleave) and fsync'ed for the events accounting cannot do without. Every event carries "type" and "t"
// (wall-clock seconds since the Unix epoch, microsecond resolution). The goodput ledger is a pure function
// of this log; the format of each event type is documented in docs/resilience.md.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::resilience {

// Wall-clock seconds since the Unix epoch (system_clock), microsecond resolution.
double wall_now();

// Event types, one table: name used in the log.
namespace event {
inline constexpr std::string_view job_start = "job_start";
inline constexpr std::string_view attempt_start = "attempt_start";
inline constexpr std::string_view init_done = "init_done";
inline constexpr std::string_view step = "step";
inline constexpr std::string_view ckpt_save_start = "ckpt_save_start";
inline constexpr std::string_view ckpt_save_end = "ckpt_save_end";
inline constexpr std::string_view ckpt_commit = "ckpt_commit";
inline constexpr std::string_view ckpt_interval = "ckpt_interval";
inline constexpr std::string_view ckpt_restore_start = "ckpt_restore_start";
inline constexpr std::string_view ckpt_restore_end = "ckpt_restore_end";
inline constexpr std::string_view fault_injected = "fault_injected";
inline constexpr std::string_view failure_detected = "failure_detected";
inline constexpr std::string_view straggler_detected = "straggler_detected";
inline constexpr std::string_view drain = "drain";
inline constexpr std::string_view preflight = "preflight";
inline constexpr std::string_view relaunch = "relaunch";
inline constexpr std::string_view attempt_end = "attempt_end";
inline constexpr std::string_view job_end = "job_end";
}  // namespace event

enum class Durability {
  flush,  // in the kernel before append returns: survives the writer's crash (SIGKILL)
  fsync,  // on disk before append returns: survives a node crash
};

class EventLog {
 public:
  // Opens (creating) the log for appending. A torn last line left by a killed writer is terminated with a
  // newline first, so the next event starts on a line of its own.
  explicit EventLog(std::filesystem::path path);
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  // Appends one event; adds "t" = wall_now() when absent. `event` must be an object with a "type".
  void append(nlohmann::json event, Durability durability = Durability::flush);
  const std::filesystem::path& path() const { return path_; }
  // Whether the file this log writes to is no longer at its path: deleted, replaced by another file, or
  // moved away (its run dir removed, renamed or swapped under a running job). The writes still succeed, into
  // a file nobody will read where it is looked for, so the owner must ask. (One stat of the path: NFS's
  // rename of a deleted open file is seen too.)
  bool removed() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  dev_t dev_ = 0;  // the file opened, to tell it from another under the same name
  ino_t ino_ = 0;
  std::mutex mutex_;  // the watchdog thread and the main thread both log
};

// An event object {"type": type, "t": t} (t = wall_now() when negative).
nlohmann::json make_event(std::string_view type, double t = -1);

struct EventLogContents {
  std::vector<nlohmann::json> events;
  std::size_t torn_lines = 0;  // lines that were not a complete JSON object with "type" and "t" (skipped)
};

// Parses JSON Lines text. Unparseable lines (a writer killed mid-line) are skipped and counted, never fatal.
EventLogContents parse_event_log(std::string_view text);
// Reads the log file; throws an input Error naming the path when it cannot be read.
EventLogContents read_event_log(const std::filesystem::path& path);
// The events appended from byte `offset` on (the log's size when an attempt began: what the attempt wrote,
// without parsing the hours of log before it); from the start when the file is now shorter than that.
// Throws an input Error naming the path when it cannot be read.
EventLogContents read_event_log_from(const std::filesystem::path& path, std::uint64_t offset);

// The step of the last complete "step" event in `text` (JSON Lines; a last line without its newline is still
// being written and is ignored), searched from the end. Pure.
std::optional<std::int64_t> last_step_event(std::string_view text);
inline constexpr std::size_t kStepTailBytes = 65536;
// The same in the last `tail_bytes` of the log file (the supervisor's progress: reading hours of log every
// few seconds would cost more than the step); nullopt when there is none there or the file cannot be read.
std::optional<std::int64_t> last_step_in_log(const std::filesystem::path& path,
                                             std::size_t tail_bytes = kStepTailBytes);

}  // namespace fb::resilience
