#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb {
namespace {

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

void sync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw runtime_error("cannot open directory " + dir.string() + ": " + errno_text());
  // An I/O error here means the new entries may not survive a crash: the write is not durable. File systems
  // that cannot sync a directory at all (EINVAL) keep their entries by other means.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const std::string text = errno_text();
    ::close(fd);
    throw runtime_error("cannot sync directory " + dir.string() + ": " + text);
  }
  ::close(fd);
}

namespace {

// write(2) until all of `data` is written; false with errno set on an error.
bool write_all(int fd, std::span<const std::byte> data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A device, FIFO or socket cannot be replaced by a rename, and must not be: `-o /dev/stdout` writes to it.
void write_through(const std::filesystem::path& path, std::span<const std::byte> data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw runtime_error("cannot open " + path.string() + ": " + errno_text());
  if (!write_all(fd, data)) {
    const std::string text = errno_text();
    ::close(fd);
    throw runtime_error("cannot write " + path.string() + ": " + text);
  }
  ::close(fd);
}

}  // namespace

WriteTarget write_target(const std::filesystem::path& path) {
  // A symbolic link stays a link: the file it names is the one replaced. Anything else that is not a
  // regular file (or a directory, which the rename refuses) is written through.
  // The chain is followed link by link, so a link whose file does not exist yet (latest.json -> run-7.json,
  // made before the run) names that file; weakly_canonical would stop at the dangling link itself.
  WriteTarget t{path, false};
  std::error_code ec;
  auto st = std::filesystem::symlink_status(path, ec);
  for (int hops = 0; !ec && std::filesystem::is_symlink(st); ++hops) {
    if (hops == 40) return t;  // a loop (ELOOP): left to the writer's error
    const auto next = std::filesystem::read_symlink(t.path, ec);
    if (ec) return t;
    t.path = next.is_absolute() ? next : t.path.parent_path() / next;
    st = std::filesystem::symlink_status(t.path, ec);
  }
  if (ec == std::errc::no_such_file_or_directory) ec.clear();  // a file to create
  t.in_place = !ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st) &&
               !std::filesystem::is_directory(st);
  return t;
}

void write_file_atomic(const std::filesystem::path& target, std::span<const std::byte> data) {
  const WriteTarget where = write_target(target);
  const std::filesystem::path& path = where.path;  // not a structured binding: clang 15 cannot capture one
  if (where.in_place) return write_through(path, data);
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // Appended, not "." + name + ...: GCC 12 warns a false -Wrestrict on that rvalue chain once inlined.
  std::string name = ".";
  name += path.filename().string();
  name += ".tmpXXXXXX";
  std::string tmp = (dir / name).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw runtime_error("cannot create a temporary file in " + dir.string() + ": " + errno_text());
  const auto fail = [&](const std::string& what) {
    const std::string text = errno_text();
    ::close(fd);
    ::unlink(tmp.c_str());
    throw runtime_error(what + " " + path.string() + ": " + text);
  };
  if (!write_all(fd, data)) fail("cannot write");
  if (::fchmod(fd, 0644) != 0) fail("cannot set permissions of");
  if (::fsync(fd) != 0) fail("cannot fsync");
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw runtime_error("cannot close " + path.string() + ": " + errno_text());
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string text = errno_text();
    ::unlink(tmp.c_str());
    throw runtime_error("cannot rename a temporary file to " + path.string() + ": " + text);
  }
  sync_directory(dir);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view text) {
  write_file_atomic(path, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

std::string read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    // exists() is false for a loop of symbolic links too: that is not a missing file.
    if (ec == std::errc::too_many_symbolic_link_levels)
      throw input_error("cannot read " + path.string() + ": a loop of symbolic links");
    throw input_error("file not found: " + path.string());
  }
  if (std::filesystem::is_directory(path, ec))
    throw input_error("expected a file, found a directory: " + path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error("cannot read " + path.string());
  // A pipe (/dev/stdin) is read like a file, but an endless one (/dev/zero) must end in an error, not in
  // all of memory.
  std::string text;
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxTextFileBytes)
      throw input_error(fmt::format("{}: more than {} GiB; not an input this tool reads", path.string(),
                                    kMaxTextFileBytes >> 30));
  }
  if (in.bad()) throw input_error("cannot read " + path.string());
  return text;
}

}  // namespace fb
