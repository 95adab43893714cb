#include "resilience/event_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace fb::resilience {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

void write_all(int fd, const std::string& data, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw runtime_error("cannot append to " + path.string() + ": " + errno_text());
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

double wall_now() {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return static_cast<double>(us) * 1e-6;
}

EventLog::EventLog(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path_.parent_path(), ec);
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw runtime_error("cannot open the event log " + path_.string() + ": " + errno_text());
  // Repair a torn last line: if the file does not end with '\n', terminate it.
  const int rd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (rd >= 0) {
    struct stat st {};
    char last = '\n';
    if (::fstat(rd, &st) == 0 && st.st_size > 0 && ::pread(rd, &last, 1, st.st_size - 1) == 1 && last != '\n')
      write_all(fd_, "\n", path_);
    ::close(rd);
  }
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::append(nlohmann::json event, Durability durability) {
  if (!event.is_object() || !event.contains("type")) throw runtime_error("event without a type");
  if (!event.contains("t")) event["t"] = wall_now();
  // One write(2) per line on an O_APPEND descriptor: concurrent writers never interleave within a line.
  const std::string line = event.dump() + "\n";
  std::lock_guard lock(mutex_);
  write_all(fd_, line, path_);
  if (durability == Durability::fsync) ::fdatasync(fd_);
}

nlohmann::json make_event(std::string_view type, double t) {
  return nlohmann::json{{"type", std::string(type)}, {"t", t < 0 ? wall_now() : t}};
}

EventLogContents parse_event_log(std::string_view text) {
  EventLogContents out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string() ||
        !j.contains("t") || !j["t"].is_number()) {
      ++out.torn_lines;
      continue;
    }
    out.events.push_back(std::move(j));
  }
  return out;
}

EventLogContents read_event_log(const std::filesystem::path& path) {
  return parse_event_log(read_text_file(path));
}

}  // namespace fb::resilience
