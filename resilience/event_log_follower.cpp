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
  if (size == offset_) return contents_;
  std::string text(size - offset_, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::pread(f.fd, text.data() + got, text.size() - got, static_cast<off_t>(offset_ + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("read");
    if (n == 0) break;  // shortened since the stat: what was read is what there is
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  const std::size_t end = text.rfind('\n');
  if (end == std::string::npos) return contents_;  // no whole line yet
  auto more = parse_event_log(std::string_view(text).substr(0, end + 1));
  contents_.events.insert(contents_.events.end(), std::make_move_iterator(more.events.begin()),
                          std::make_move_iterator(more.events.end()));
  contents_.torn_lines += more.torn_lines;
  offset_ += end + 1;
  return contents_;
}

}  // namespace fb::resilience
