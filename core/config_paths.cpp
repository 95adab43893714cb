#include "core/config_paths.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"

#ifndef FB_SOURCE_CONFIG_DIR
#define FB_SOURCE_CONFIG_DIR "configs"
#endif

namespace fb {

std::filesystem::path config_dir() {
  if (const char* env = std::getenv("FACTORYBENCH_CONFIG_DIR"); env && *env) {
    // A misspelled directory would leave the hardware table empty: no peaks, no MFU, a GPU's health
    // floor applied to a CPU, all without a word.
    std::error_code ec;
    if (!std::filesystem::is_directory(env, ec))
      throw input_error(std::string("FACTORYBENCH_CONFIG_DIR=") + env +
                        ": not a directory (it names the configs folder: hardware, models, suites, ...)");
    return env;
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "factorybench" / "configs";
    if (std::filesystem::is_directory(installed, ec)) return installed;
  }
  return FB_SOURCE_CONFIG_DIR;
}

namespace {

// How a message names one preset of a folder: "model", "suite", "failure model" ("floors" stays plural:
// one file holds a set of them).
std::string kind_of(std::string_view category) {
  std::string kind(category);
  if (kind.size() > 1 && kind.back() == 's' && kind != "floors") kind.pop_back();
  std::replace(kind.begin(), kind.end(), '-', ' ');
  return kind;
}

}  // namespace

std::filesystem::path resolve_config(std::string_view category, std::string_view name_or_path) {
  const std::string kind = kind_of(category);
  const std::filesystem::path given(name_or_path);
  std::error_code ec;
  const bool looks_like_path = given.has_parent_path() || given.extension() == ".json";
  if (looks_like_path) {
    if (std::filesystem::is_regular_file(given, ec)) return given;
    // A path that exists but is no regular file (/dev/null, a folder) is not "not found".
    if (std::filesystem::exists(given, ec))
      throw input_error(given.string() + " is not a " + kind + " file (not a regular file)");
    throw input_error(kind + " file not found: " + given.string());
  }
  const auto dir = config_dir() / category;
  const auto candidate = dir / (std::string(name_or_path) + ".json");
  if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  // Not a preset, but a file of that name here (suite.txt, plan.yaml): the file, as a path would be.
  if (std::filesystem::is_regular_file(given, ec)) return given;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  std::string list;
  for (const auto& n : names) {
    if (!list.empty()) list += ", ";
    list += n;
  }
  throw input_error("unknown " + kind + " '" + std::string(name_or_path) + "'" +
                    (list.empty() ? std::string(" (no presets found in ") + dir.string() + ")"
                                  : " (available: " + list + ")"));
}

}  // namespace fb
