#include "core/logging.hpp"

#include <cstdio>
#include <mutex>

#include "core/error.hpp"

namespace fb::log {
namespace {

struct State {
  int rank = 0;
  int world_size = 0;  // 0: not known yet
  Level level = Level::info;
  bool quiet = false;
  std::mutex mutex;
};
State& state() {
  static State s;
  return s;
}

}  // namespace

Level parse_level(std::string_view text) {
  if (text == "error") return Level::error;
  if (text == "warn" || text == "warning") return Level::warn;
  if (text == "info") return Level::info;
  if (text == "debug") return Level::debug;
  throw usage_error("invalid --log-level '" + std::string(text) + "' (expected error, warn, info or debug)");
}

void configure(int rank, Level level, bool quiet) {
  auto& s = state();
  s.rank = rank;
  s.level = level;
  s.quiet = quiet;
}

void set_world_size(int size) {
  std::lock_guard lock(state().mutex);
  state().world_size = size;
}

bool enabled_on_this_rank(Level level) {
  const auto& s = state();
  return !(s.quiet && level > Level::error) && level <= s.level;
}

bool enabled(Level level) {
  const auto& s = state();
  // Errors and debug output come from every rank; the rest from rank 0 only.
  return enabled_on_this_rank(level) && (s.rank == 0 || level == Level::error || s.level == Level::debug);
}

void write(Level level, std::string_view text) {
  static constexpr const char* kNames[] = {"error", "warning", "info", "debug"};
  // Errors and warnings are one line each, whatever they quote; info may be a block (a table).
  const std::string escaped = level <= Level::warn ? one_line(text) : std::string();
  const std::string_view message = level <= Level::warn ? std::string_view(escaped) : text;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (level == Level::info && s.rank == 0)
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  else if (s.world_size == 1)  // alone: no rank to tell apart
    std::fprintf(stderr, "%s: %.*s\n", kNames[static_cast<int>(level)], static_cast<int>(message.size()),
                 message.data());
  else
    std::fprintf(stderr, "[rank %d] %s: %.*s\n", s.rank, kNames[static_cast<int>(level)],
                 static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

}  // namespace fb::log
