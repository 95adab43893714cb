#pragma once
// Diagnostics on stderr. Rank 0 speaks by default; --log-level debug lets every rank speak (prefixed).
// Human results go to stdout through the commands, never through here.
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fb::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3 };

Level parse_level(std::string_view text);  // error|warn|info|debug; usage Error otherwise
void configure(int rank, Level level, bool quiet);
// The job's size once MPI is up: a process alone prints "warning: ...", not "[rank 0] warning: ..." (0, the
// default: unknown, prefixed).
void set_world_size(int size);
bool enabled(Level level);
void write(Level level, std::string_view message);

template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::error)) write(Level::error, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::warn)) write(Level::warn, fmt::format(f, std::forward<Args>(args)...));
}
// A warning only this rank can give (a fact it alone holds, as an injected fault aimed at it): printed by
// whichever rank it is, as errors are; --quiet and --log-level error still silence it.
bool enabled_on_this_rank(Level level);
template <typename... Args>
void warn_from_this_rank(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled_on_this_rank(Level::warn)) write(Level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::info)) write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(Level::debug)) write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace fb::log
