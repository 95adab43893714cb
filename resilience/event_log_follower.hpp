#pragma once
// Reading an event log as it grows (resilience/event_log.hpp). The supervisor saves its report so far every
// few seconds while a job runs (tools/resilience_so_far.hpp); parsing the whole log each time made that
// cost grow with the run (a 100000-step job: 20 MB of JSON Lines parsed per save). The follower parses only
// the lines appended since its last read.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "resilience/event_log.hpp"

namespace fb::resilience {

// The bytes of the open file `fd` from `from` to `to` up to and including the last newline: the whole lines
// appended there (a last line without its newline is still being written; empty when there is none). None
// when the file cannot be read (errno says why).
std::optional<std::string> appended_whole_lines(int fd, std::uint64_t from, std::uint64_t to);

class EventLogFollower {
 public:
  explicit EventLogFollower(std::filesystem::path path) : path_(std::move(path)) {}
  // Every event of the log so far, as read_event_log parses them, reading only what was appended since the
  // last call. A last line without its newline is still being written: it is read once it is complete (a
  // writer killed mid-line has the next writer end it, EventLog, and it then counts as torn). A file shorter
  // than what was read, or another file at the path (a new job's log), is read again from its start.
  // Throws an input Error naming the path when it cannot be read.
  const EventLogContents& read();

 private:
  std::filesystem::path path_;
  std::uint64_t offset_ = 0;  // bytes parsed: whole lines
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  EventLogContents contents_;
};

}  // namespace fb::resilience
