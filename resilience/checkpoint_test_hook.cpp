#include "resilience/checkpoint_test_hook.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::resilience {
namespace {

constexpr const char* kPauseVar = "FACTORYBENCH_TEST_CKPT_PAUSE";
constexpr std::string_view kPhaseNames[] = {"snapshot", "shard", "manifest", "prune", "restore"};

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

const std::vector<CheckpointPause>& pauses_from_environment() {
  // Read once: every rank and the writer thread see the same plan; a bad value is a usage error at the
  // first save (the variable is a test hook, not a user option).
  static const std::vector<CheckpointPause> pauses = [] {
    const char* text = std::getenv(kPauseVar);
    return text && *text ? parse_checkpoint_pauses(text) : std::vector<CheckpointPause>{};
  }();
  return pauses;
}

}  // namespace

std::vector<CheckpointPause> parse_checkpoint_pauses(std::string_view text) {
  std::vector<CheckpointPause> out;
  const auto bad = [&](std::string_view item, const std::string& why) {
    return usage_error(fmt::format("invalid {} item '{}': {}", kPauseVar, item, why));
  };
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = trim_spaces(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) throw bad(item, "expected PHASE=SECONDS[@STEP]");
    CheckpointPause p;
    const auto name = item.substr(0, eq);
    std::size_t index = 0;
    while (index < std::size(kPhaseNames) && kPhaseNames[index] != name) ++index;
    if (index == std::size(kPhaseNames))
      throw bad(item, fmt::format("unknown phase '{}' (snapshot, shard, manifest, prune, restore)", name));
    p.phase = static_cast<CheckpointPhase>(index);
    auto value = std::string(item.substr(eq + 1));
    if (const auto at = value.find('@'); at != std::string::npos) {
      const auto step = value.substr(at + 1);
      char* end = nullptr;
      p.step = std::strtoll(step.c_str(), &end, 10);
      if (step.empty() || *end != '\0' || p.step < 0) throw bad(item, "the step must be a whole number ≥ 0");
      value.resize(at);
    }
    char* end = nullptr;
    p.seconds = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(p.seconds >= 0 && p.seconds <= 3600))
      throw bad(item, "the seconds must be a number in [0, 3600]");
    out.push_back(p);
  }
  return out;
}

void checkpoint_test_pause(CheckpointPhase phase, std::int64_t step, int rank) {
  for (const auto& p : pauses_from_environment()) {
    if (p.phase != phase || (p.step >= 0 && p.step != step)) continue;
    if (const char* mark = std::getenv("FACTORYBENCH_TEST_CKPT_MARK"); mark && *mark) {
      // One write per line with O_APPEND: lines from several ranks and threads never interleave.
      const auto line = fmt::format("{} {} {}\n", kPhaseNames[static_cast<int>(phase)], step, rank);
      const int fd = ::open(mark, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) {
        if (::write(fd, line.data(), line.size()) < 0) { /* a test hook: the pause still happens */
        }
        ::close(fd);
      }
    }
    // A release file ends the pause early: a test holds a save for as long as its checks take, however
    // loaded the machine, instead of guessing a pause long enough for them.
    const char* release = std::getenv("FACTORYBENCH_TEST_CKPT_RELEASE");
    using Clock = std::chrono::steady_clock;
    const auto until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(p.seconds));
    for (auto now = Clock::now(); now < until; now = Clock::now()) {
      if (release && *release && ::access(release, F_OK) == 0) break;
      std::this_thread::sleep_for(std::min<Clock::duration>(std::chrono::milliseconds(20), until - now));
    }
  }
}

}  // namespace fb::resilience
