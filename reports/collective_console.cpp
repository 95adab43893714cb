#include "reports/collective_console.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fb::reports {
namespace {

constexpr std::string_view kInplaceSuffix = "/inplace";

std::string placement_columns(const Result* r) {
  if (r == nullptr) return fmt::format("  {:>9}  {:>7}  {:>7}  {:>6}", "-", "-", "-", "-");
  if (r->status == Status::skipped)
    return fmt::format("  {:>9}  {:>7}  {:>7}  {:>6}", "skipped", "-", "-", "-");
  const Metric* wrong = r->metric("wrong");
  return fmt::format("  {:>9.2f}  {:>7.2f}  {:>7.2f}  {:>6}", r->metric("time_us")->value,
                     r->metric("algbw_gbps")->value, r->metric("busbw_gbps")->value,
                     wrong ? fmt::format("{:.0f}", wrong->value) : std::string("N/A"));
}

std::string section_title(const Result& r) {
  const auto& p = r.params;
  std::string title =
      fmt::format("# {}: {} rank(s), {}", p.value("op", "?"), p.value("ranks", 0), p.value("dtype", "?"));
  if (p.contains("phase"))
    title = fmt::format(
        "# MoE {} (alltoallv): {} rank(s), {}, {} tokens/rank, hidden {}, {} experts, top-{}, skew {}; "
        "busiest rank {} moves {:.1f}% of the traffic",
        p.value("phase", "?"), p.value("ranks", 0), p.value("dtype", "?"), p.value("tokens", 0),
        p.value("hidden", 0), p.value("experts", 0), p.value("top_k", 0), p.value("skew", 0.0),
        p.value("busiest_rank", 0), 100.0 * p.value("busiest_share", 0.0));
  if (p.contains("group"))
    title += fmt::format(" (group {}: ranks {}-{})", p["group"].get<int>(), p["first_rank"].get<int>(),
                         p["first_rank"].get<int>() + p.value("ranks", 1) - 1);
  return title;
}

}  // namespace

void print_collective_table(std::ostream& out, std::span<const Result> results) {
  std::map<std::string, const Result*> by_name;
  for (const auto& r : results) by_name[r.name] = &r;

  // One table per section (op, type, group): with --split the groups of one size are measured together and
  // their results interleave, so rows are gathered by section, in the order sections first appear.
  std::map<std::string, std::size_t> section_order;
  std::vector<std::pair<std::size_t, const Result*>> rows;
  for (const auto& r : results) {
    if (!r.params.contains("bytes")) continue;  // summary rows (avg_busbw names its op too)
    const auto order = section_order.emplace(section_title(r), section_order.size()).first->second;
    rows.emplace_back(order, &r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  std::string section;
  bool any_check = false;
  double wrong_total = 0;
  for (const auto& [order, row] : rows) {
    const Result& r = *row;
    const bool inplace = r.params.value("inplace", false);
    std::string base = r.name;
    if (inplace) {
      // Printed next to its out-of-place twin; alone only when that twin is missing.
      const auto pos = base.find(kInplaceSuffix);
      if (pos != std::string::npos && by_name.count(base.erase(pos, kInplaceSuffix.size()))) continue;
    }
    const std::string title = section_title(r);
    if (title != section) {
      section = title;
      out << "#\n" << title << "\n";
      out << fmt::format("#{:>73}{:>39}\n", "out-of-place", "in-place");
      out << fmt::format(
          "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}\n",
          "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
          "busbw", "#wrong");
      out << fmt::format(
          "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}\n",
          "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    const Result* oop = inplace ? nullptr : &r;
    const Result* inp = inplace ? &r : nullptr;
    if (!inplace) {
      std::string twin = r.name;
      const auto slash = twin.find("/group");
      twin.insert(slash == std::string::npos ? twin.size() : slash, kInplaceSuffix);
      if (auto it = by_name.find(twin); it != by_name.end()) inp = it->second;
    }
    for (const Result* x : {oop, inp})
      if (x && x->metric("wrong")) {
        any_check = true;
        wrong_total += x->metric("wrong")->value;
      }
    out << fmt::format(" {:>11}  {:>12}  {:>8}  {:>6}  {:>6}", r.params.value("bytes", 0ull),
                       r.params.value("count", 0ull), r.params.value("dtype", "?"),
                       r.params.value("redop", "none"), r.params.value("root", -1))
        << placement_columns(oop) << placement_columns(inp) << "\n";
  }
  if (any_check)
    out << fmt::format("# Wrong elements : {:.0f} {}\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
  for (const auto& r : results) {
    if (r.params.contains("bytes") || !r.metric("busbw_gbps")) continue;
    const std::string group =
        r.params.contains("group") ? fmt::format(" (group {})", r.params["group"].get<int>()) : "";
    out << fmt::format("# Avg bus bandwidth{} : {:.3f}", group, r.metric("busbw_gbps")->value);
    if (r.params.contains("min_busbw_gbps"))
      out << fmt::format("  (--min-busbw {:.3f}: {})", r.params["min_busbw_gbps"].get<double>(),
                         r.status == Status::failed ? "FAILED" : "OK");
    out << "\n";
  }
  out << "#\n";
}

}  // namespace fb::reports
