// resilience/event_log_follower.hpp: a log read as it grows gives the events read_event_log gives for the
// whole file, a line still being written waits for its newline, another file at the path starts over, and a
// read from an offset gives what was appended since.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "resilience/event_log.hpp"
#include "resilience/event_log_follower.hpp"

namespace fb::resilience {
namespace {

struct Dir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("fb-follower-" + std::to_string(::getpid()) + "-" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Dir() { std::filesystem::create_directories(path); }
  ~Dir() { std::filesystem::remove_all(path); }
};

void raw_append(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

nlohmann::json step_event(int step) {
  auto e = make_event(event::step, 100.0 + step);
  e["step"] = step;
  return e;
}

TEST(EventLogFollower, ReadsWhatWasAppendedAndMatchesTheWholeRead) {
  const Dir dir;
  const auto path = dir.path / "events.jsonl";
  EventLog log(path);
  EventLogFollower follower(path);
  log.append(make_event(event::job_start, 100));
  EXPECT_EQ(follower.read().events.size(), 1u);
  for (int i = 1; i <= 500; ++i) log.append(step_event(i));
  EXPECT_EQ(follower.read().events.size(), 501u);
  EXPECT_EQ(follower.read().events.size(), 501u);  // nothing new: nothing added twice
  log.append(make_event(event::job_end, 700));
  const auto& so_far = follower.read();
  const auto whole = read_event_log(path);
  EXPECT_EQ(so_far.events, whole.events);
  EXPECT_EQ(so_far.events.back()["type"], "job_end");
  EXPECT_EQ(so_far.events[250]["step"], 250);
}

TEST(EventLogFollower, ALineStillBeingWrittenIsReadOnceComplete) {
  const Dir dir;
  const auto path = dir.path / "events.jsonl";
  raw_append(path, "{\"type\":\"job_start\",\"t\":1}\n{\"type\":\"step\",\"t\":2,");
  EventLogFollower follower(path);
  EXPECT_EQ(follower.read().events.size(), 1u);
  EXPECT_EQ(follower.read().torn_lines, 0u);
  raw_append(path, "\"step\":1}\n{\"type\":\"st");
  ASSERT_EQ(follower.read().events.size(), 2u);
  EXPECT_EQ(follower.read().events[1]["step"], 1);
  // A writer killed mid-line: the next EventLog ends it, and it counts as torn, as read_event_log counts it.
  EventLog(path).append(make_event(event::job_end, 3));
  const auto& c = follower.read();
  EXPECT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.torn_lines, 1u);
  EXPECT_EQ(c.torn_lines, read_event_log(path).torn_lines);
}

TEST(EventLogFollower, AnotherFileAtThePathIsReadFromItsStart) {
  const Dir dir;
  const auto path = dir.path / "events.jsonl";
  raw_append(path, "{\"type\":\"job_start\",\"t\":1}\n{\"type\":\"step\",\"t\":2,\"step\":1}\n");
  EventLogFollower follower(path);
  EXPECT_EQ(follower.read().events.size(), 2u);
  // A new job's log replaces the file: its events only, not the old ones with the new ones after them.
  raw_append(dir.path / "new.jsonl", "{\"type\":\"job_start\",\"t\":10}\n");
  std::filesystem::rename(dir.path / "new.jsonl", path);
  ASSERT_EQ(follower.read().events.size(), 1u);
  EXPECT_EQ(follower.read().events[0]["t"], 10);
  // Truncated in place and written again: shorter than what was read, so read again.
  std::filesystem::resize_file(path, 0);
  raw_append(path, "{\"type\":\"job_end\",\"t\":20}\n");
  ASSERT_EQ(follower.read().events.size(), 1u);
  EXPECT_EQ(follower.read().events[0]["type"], "job_end");
}

TEST(EventLogFollower, AMissingLogIsAnErrorNamingIt) {
  const Dir dir;
  EventLogFollower follower(dir.path / "none.jsonl");
  try {
    follower.read();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("none.jsonl"), std::string::npos) << e.what();
  }
}

// What one attempt wrote: the events from the log's size when it began (the supervisor's read at the
// attempt's end), the same as the whole read's tail; a log now shorter than that is read whole.
TEST(EventLogFollower, ReadFromAnOffsetGivesTheEventsAppendedSince) {
  const Dir dir;
  const auto path = dir.path / "events.jsonl";
  EventLog log(path);
  for (int s = 1; s <= 3; ++s) log.append(step_event(s));
  const auto offset = std::filesystem::file_size(path);
  EXPECT_TRUE(read_event_log_from(path, offset).events.empty());
  for (int s = 4; s <= 6; ++s) log.append(step_event(s));
  raw_append(path, "{\"type\":\"st");  // a writer killed mid-line: torn, skipped and counted
  const auto since = read_event_log_from(path, offset);
  ASSERT_EQ(since.events.size(), 3u);
  EXPECT_EQ(since.events.front()["step"], 4);
  EXPECT_EQ(since.torn_lines, 1u);
  const auto whole = read_event_log(path).events;
  EXPECT_TRUE(std::equal(since.events.begin(), since.events.end(), whole.end() - 3));
  EXPECT_EQ(read_event_log_from(path, 0).events, whole);
  EXPECT_EQ(read_event_log_from(path, 1u << 30).events, whole);
  EXPECT_THROW(read_event_log_from(dir.path / "none.jsonl", 0), Error);
}

}  // namespace
}  // namespace fb::resilience
