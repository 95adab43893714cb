#pragma once
// Durable, all-or-nothing file writes: write a temporary file beside the target, fsync it, rename it over
// the target, fsync the directory. A crash at any point leaves either the old file or the new one. A symbolic
// link is followed (its target is replaced, the link kept); a device or FIFO (`-o /dev/stdout`) is written
// to.
#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace fb {

// Where write_file_atomic puts the bytes for `path`: a symbolic link resolved to the file it names, and
// whether that is written to in place (a device, FIFO or socket) rather than replaced by a rename.
struct WriteTarget {
  std::filesystem::path path;
  bool in_place = false;
};
WriteTarget write_target(const std::filesystem::path& path);

void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> data);
void write_file_atomic(const std::filesystem::path& path, std::string_view text);
// fsync of a directory, so a rename inside it is durable.
void sync_directory(const std::filesystem::path& dir);
// Whole file as text; throws an input Error naming the path when it cannot be read.
// Inputs beyond this size are refused (input error): no report, log or config is near it.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t{1} << 30;
std::string read_text_file(const std::filesystem::path& path);

}  // namespace fb
