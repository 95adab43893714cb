#include "resilience/event_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>

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

// The file's bytes from `from` to its end (from its start when it is now shorter than that); none when it
// cannot be read.
std::optional<std::string> bytes_from(const std::filesystem::path& path, std::uint64_t from) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, in.tellg()));
  if (from > size) from = 0;
  std::string text(size - from, '\0');
  in.seekg(static_cast<std::streamoff>(from));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return std::nullopt;
  text.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return text;
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
  struct stat opened {};
  if (::fstat(fd_, &opened) == 0) {
    dev_ = opened.st_dev;
    ino_ = opened.st_ino;
  }
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

bool EventLog::removed() const {
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_nlink == 0) return true;
  return ::stat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_;
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

EventLogContents read_event_log_from(const std::filesystem::path& path, std::uint64_t offset) {
  const auto text = bytes_from(path, offset);
  if (!text) throw input_error("cannot read " + path.string());
  return parse_event_log(*text);
}

std::optional<std::int64_t> last_step_event(std::string_view text) {
  std::size_t end = text.rfind('\n');
  while (end != std::string_view::npos) {
    const std::size_t start = end == 0 ? std::string_view::npos : text.rfind('\n', end - 1);
    const std::size_t from = start == std::string_view::npos ? 0 : start + 1;
    const std::string_view line = text.substr(from, end - from);
    // Cheap test first: most lines of a long run are step events, but not every line is one.
    if (line.find("\"step\"") != std::string_view::npos) {
      const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded() && j.is_object() && j.value("type", "") == event::step && j.contains("step") &&
          j["step"].is_number_integer())
        return j["step"].get<std::int64_t>();
    }
    if (start == std::string_view::npos) break;
    end = start;
  }
  return std::nullopt;
}

std::optional<std::int64_t> last_step_in_log(const std::filesystem::path& path, std::size_t tail_bytes) {
  std::error_code ec;
  const std::uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return std::nullopt;
  const std::uint64_t from = size > tail_bytes ? size - tail_bytes : 0;
  const auto text = bytes_from(path, from);
  if (!text) return std::nullopt;
  // A tail that starts mid-line: the first (partial) line is not parsed as a line of its own.
  std::string_view view(*text);
  if (from > 0) {
    const auto first = view.find('\n');
    view = first == std::string_view::npos ? std::string_view() : view.substr(first + 1);
  }
  return last_step_event(view);
}

}  // namespace fb::resilience
