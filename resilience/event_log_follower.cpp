#include "resilience/event_log_follower.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace fb::resilience {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::optional<std::string> appended_whole_lines(int fd, std::uint64_t from, std::uint64_t to) {
  if (to <= from) return std::string();
  std::string text(to - from, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + got, text.size() - got, static_cast<off_t>(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;  // shortened since: what was read is what there is
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  text.resize(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
  return text;
}

const EventLogContents& EventLogFollower::read() {
  const auto fail = [&](const char* what) {
    throw input_error("cannot " + std::string(what) + " " + path_.string() + ": " + std::strerror(errno));
  };
  const Fd f{::open(path_.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail("open");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail("stat");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (st.st_dev != dev_ || st.st_ino != ino_ || size < offset_) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    offset_ = 0;
    contents_ = {};
  }
  const auto read = appended_whole_lines(f.fd, offset_, size);
  if (!read) fail("read");
  const std::string& text = *read;
  if (text.empty()) return contents_;  // no whole line yet
  auto more = parse_event_log(text);
  contents_.events.insert(contents_.events.end(), std::make_move_iterator(more.events.begin()),
                          std::make_move_iterator(more.events.end()));
  contents_.torn_lines += more.torn_lines;
  offset_ += text.size();
  return contents_;
}

}  // namespace fb::resilience
