// Atomic file writes (core/atomic_file.hpp) on what -o may name besides a plain file: a symbolic link keeps
// being a link to the rewritten file, and a FIFO is written to, not replaced by a regular file (as root,
// `-o /dev/stdout` used to replace the device node).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/atomic_file.hpp"

namespace fb {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fb-atomic-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AtomicFile, ReplacesAPlainFileWhole) {
  TempDir d;
  write_file_atomic(d.path / "r.json", std::string_view("old"));
  write_file_atomic(d.path / "r.json", std::string_view("new"));
  EXPECT_EQ(slurp(d.path / "r.json"), "new");
  EXPECT_EQ(std::distance(fs::directory_iterator(d.path), fs::directory_iterator()), 1);  // no temp left
}

TEST(AtomicFile, ASymlinkStaysALinkToTheRewrittenFile) {
  TempDir d;
  write_file_atomic(d.path / "target.json", std::string_view("old"));
  fs::create_symlink("target.json", d.path / "link.json");
  write_file_atomic(d.path / "link.json", std::string_view("new"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(d.path / "link.json")));
  EXPECT_EQ(slurp(d.path / "target.json"), "new");
}

// latest.json -> run-7.json, made before the run: the report lands in run-7.json (it was "cannot open
// latest.json", exit 3, after the whole run), also through a chain of links into a subdirectory.
TEST(AtomicFile, ALinkToAFileNotYetWrittenCreatesThatFile) {
  TempDir d;
  fs::create_symlink("run-7.json", d.path / "latest.json");
  write_file_atomic(d.path / "latest.json", std::string_view("first"));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(d.path / "latest.json")));
  EXPECT_EQ(slurp(d.path / "run-7.json"), "first");
  fs::create_directory(d.path / "sub");
  fs::create_symlink("sub/hop.json", d.path / "chain.json");
  fs::create_symlink("x.json", d.path / "sub" / "hop.json");
  EXPECT_EQ(write_target(d.path / "chain.json").path, d.path / "sub" / "x.json");
  write_file_atomic(d.path / "chain.json", std::string_view("second"));
  EXPECT_EQ(slurp(d.path / "sub" / "x.json"), "second");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(d.path / "sub" / "hop.json")));
}

TEST(AtomicFile, AFifoIsWrittenToNotReplaced) {
  TempDir d;
  const auto fifo = d.path / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  write_file_atomic(fifo, std::string_view("through"));
  reader.join();
  EXPECT_EQ(got, "through");
  EXPECT_TRUE(fs::is_fifo(fs::status(fifo)));
}

}  // namespace
}  // namespace fb
