#include "reports/gpu_slowdown.hpp"

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace fb::reports {
namespace {

// Each rank's slowdown reasons in one summary.telemetry block ({"ranks": [{"rank", "gpu": {...}}]}).
std::vector<std::pair<std::size_t, std::vector<std::string>>> rank_slowdowns(const nlohmann::json& tel) {
  std::vector<std::pair<std::size_t, std::vector<std::string>>> out;
  if (!tel.is_object() || !tel.contains("ranks") || !tel["ranks"].is_array()) return out;
  for (std::size_t i = 0; i < tel["ranks"].size(); ++i) {
    const auto& r = tel["ranks"][i];
    if (!r.is_object() || !r.contains("gpu") || !r["gpu"].is_object()) continue;
    auto reasons = slowdown_reason_names(r["gpu"].value("slowdown_reasons", nlohmann::json()));
    const auto rank =
        r.contains("rank") && r["rank"].is_number_integer() && r["rank"].get<std::int64_t>() >= 0
            ? r["rank"].get<std::size_t>()
            : i;
    if (!reasons.empty()) out.emplace_back(rank, std::move(reasons));
  }
  return out;
}

}  // namespace

std::string slowdown_text(const GpuSlowdown& s) {
  std::string out = fmt::format("{}", fmt::join(s.reasons, ", "));
  if (!s.ranks.empty())
    out += fmt::format(" (rank{} {})", s.ranks.size() == 1 ? "" : "s", fmt::join(s.ranks, ", "));
  return out;
}

std::vector<std::string> slowdown_warnings(const Report& report) {
  constexpr std::size_t kMaxResultLines = 10;  // a throttled sweep names its first results, then counts
  std::vector<std::string> out;
  std::set<std::pair<std::size_t, std::string>> named;  // (rank, reason) a result line already shows
  std::set<std::string> named_any_rank;                 // reasons of results that do not say the rank
  // Results that carry one telemetry window (the run's, copied into each result without a window of its own:
  // health's per-rank results, burnin's per-node ones) are one line: the slowdown is the window's, and a
  // line per result would name every node for one rank's throttle.
  struct Line {
    std::vector<std::string> names;
    GpuSlowdown slowdown;
  };
  std::vector<Line> lines;
  std::map<std::tuple<std::string, double, double>, std::size_t> by_window;
  for (const auto& r : report.results) {
    const auto s = find_gpu_slowdown(r);
    if (!s) continue;
    for (const auto& reason : s->reasons) {
      if (s->ranks.empty()) named_any_rank.insert(reason);
      for (const auto rank : s->ranks) named.insert({rank, reason});
    }
    // Named with its benchmark (gemm's "bf16/8192x8192x8192" alone does not say what ran).
    const bool prefixed = r.name == r.benchmark || r.name.starts_with(r.benchmark + "/");
    const std::string name = (prefixed ? "" : r.benchmark + "/") + r.name;
    const auto w = find_telemetry_window(r);
    const auto key = std::make_tuple(slowdown_text(*s), w ? w->from_s : -1.0, w ? w->to_s : -1.0);
    if (const auto it = by_window.find(key); w && it != by_window.end()) {
      lines[it->second].names.push_back(name);
      continue;
    }
    by_window[key] = lines.size();
    lines.push_back({{name}, *s});
  }
  for (std::size_t i = 0; i < lines.size() && i < kMaxResultLines; ++i) {
    const auto& l = lines[i];
    const std::string what =
        l.names.size() == 1 ? l.names[0]
                            : fmt::format("the window of {} results ({}{})", l.names.size(), l.names[0],
                                          l.names.size() > 1 ? fmt::format(" … {}", l.names.back()) : "");
    out.push_back(fmt::format("GPU slowdown during {}: {}", what, slowdown_text(l.slowdown)));
  }
  if (lines.size() > kMaxResultLines) {
    const std::size_t more = lines.size() - kMaxResultLines;
    out.push_back(fmt::format("GPU slowdown during {} more result{}", more, more == 1 ? "" : "s"));
  }
  // The run's telemetry also covers the time between results' windows (and a suite step's, its step).
  // A suite's summary.telemetry holds only the moments after its last step.
  std::vector<std::pair<std::string, const nlohmann::json*>> blocks;
  if (report.summary.is_object()) {
    if (report.summary.contains("steps") && report.summary["steps"].is_object())
      for (const auto& [step, v] : report.summary["steps"].items())
        if (v.is_object() && v.contains("telemetry")) blocks.emplace_back("step " + step, &v["telemetry"]);
    if (report.summary.contains("telemetry"))
      blocks.emplace_back(blocks.empty() ? "the run" : "the suite's end", &report.summary["telemetry"]);
  }
  for (const auto& [where, tel] : blocks) {
    std::map<std::vector<std::string>, std::vector<std::size_t>> ranks_by_reasons;
    for (auto& [rank, reasons] : rank_slowdowns(*tel)) {
      std::erase_if(reasons, [&, rank = rank](const std::string& x) {
        return named.count({rank, x}) || named_any_rank.count(x);
      });
      if (!reasons.empty()) ranks_by_reasons[reasons].push_back(rank);
    }
    for (const auto& [reasons, ranks] : ranks_by_reasons)
      out.push_back(fmt::format("GPU slowdown during {}: {}", where, slowdown_text({reasons, ranks})));
  }
  return out;
}

}  // namespace fb::reports
