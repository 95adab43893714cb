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

// The name of an out-of-place result's in-place twin: "/inplace" before any "/group<g>".
std::string inplace_twin(std::string name) {
  const auto slash = name.find("/group");
  name.insert(slash == std::string::npos ? name.size() : slash, kInplaceSuffix);
  return name;
}

void print_section_header(std::ostream& out, const std::string& title) {
  out << "#\n" << title << "\n";
  out << fmt::format("#{:>73}{:>39}\n", "out-of-place", "in-place");
  out << fmt::format(
      "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
      "#wrong");
  out << fmt::format(
      "#{:>11}  {:>12}  {:>8}  {:>6}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}  {:>9}  {:>7}  {:>7}  {:>6}\n", "(B)",
      "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

// One size: its columns from whichever placement is there (`r`), then each placement's figures.
void print_size_row(std::ostream& out, const Result& r, const Result* oop, const Result* inp) {
  out << fmt::format(" {:>11}  {:>12}  {:>8}  {:>6}  {:>6}", r.params.value("bytes", 0ull),
                     r.params.value("count", 0ull), r.params.value("dtype", "?"),
                     r.params.value("redop", "none"), r.params.value("root", -1))
      << placement_columns(oop) << placement_columns(inp) << "\n";
}

// "# Wrong elements" over every size (when any was checked), each "# Avg bus bandwidth" line, and "#".
void print_footer(std::ostream& out, std::span<const Result> results) {
  bool any_check = false;
  double wrong_total = 0;
  for (const auto& r : results)
    if (const Metric* wrong = r.metric("wrong"); wrong && r.params.contains("bytes")) {
      any_check = true;
      wrong_total += wrong->value;
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
  for (const auto& [order, row] : rows) {
    const Result& r = *row;
    const bool inplace = r.params.value("inplace", false);
    std::string base = r.name;
    if (inplace) {
      // Printed next to its out-of-place twin; alone only when that twin is missing.
      const auto pos = base.find(kInplaceSuffix);
      if (pos != std::string::npos && by_name.count(base.erase(pos, kInplaceSuffix.size()))) continue;
    }
    if (const std::string title = section_title(r); title != section) {
      section = title;
      print_section_header(out, title);
    }
    const Result* inp = inplace ? &r : nullptr;
    if (!inplace)
      if (auto it = by_name.find(inplace_twin(r.name)); it != by_name.end()) inp = it->second;
    print_size_row(out, r, inplace ? nullptr : &r, inp);
  }
  print_footer(out, results);
}

CollectiveTableStream::CollectiveTableStream(std::ostream& out, bool inplace_twins)
    : out_(out), inplace_twins_(inplace_twins) {}

void CollectiveTableStream::add(const Result& r) {
  if (finished_ || !r.params.contains("bytes")) return;
  if (r.params.value("inplace", false)) {
    if (waiting_ && inplace_twin(waiting_->name) == r.name) {
      print_row(&*waiting_, &r);
      waiting_.reset();
      return;
    }
    if (waiting_) print_row(&*waiting_, nullptr);
    waiting_.reset();
    print_row(nullptr, &r);
    return;
  }
  if (waiting_) print_row(&*waiting_, nullptr);
  waiting_.reset();
  if (inplace_twins_)
    waiting_ = r;
  else
    print_row(&r, nullptr);
}

void CollectiveTableStream::finish(std::span<const Result> results) {
  if (finished_) return;
  if (waiting_) print_row(&*waiting_, nullptr);
  waiting_.reset();
  finished_ = true;
  print_footer(out_, results);
  out_.flush();
}

void CollectiveTableStream::print_row(const Result* oop, const Result* inp) {
  const Result& r = oop ? *oop : *inp;
  if (const std::string title = section_title(r); title != section_) {
    section_ = title;
    print_section_header(out_, title);
  }
  print_size_row(out_, r, oop, inp);
  out_.flush();  // a log read while the sweep runs (tail -f, a Slurm output file) shows the size now
}

}  // namespace fb::reports
