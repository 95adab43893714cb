// The terminal rendering of a comparison: aligned columns, one row per compared metric.
#include <array>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "reports/compare_printers.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {

CompareFormat parse_compare_format(std::string_view text) {
  if (text == "table") return CompareFormat::table;
  if (text == "md" || text == "markdown") return CompareFormat::markdown;
  if (text == "json") return CompareFormat::json_document;
  if (text == "junit") return CompareFormat::junit;
  throw usage_error("invalid --format '" + std::string(text) + "': expected table, md, json or junit");
}

std::string render_compare(const Comparison& c, CompareFormat format) {
  switch (format) {
    case CompareFormat::table:
      return render_compare_table(c);
    case CompareFormat::markdown:
      return render_compare_markdown(c);
    case CompareFormat::json_document:
      return render_compare_json(c);
    case CompareFormat::junit:
      return render_compare_junit(c);
  }
  return render_compare_table(c);
}

std::string render_compare_table(const Comparison& c) {
  constexpr std::size_t kColumns = 8;
  using Row = std::array<std::string, kColumns>;
  std::vector<Row> rows;
  rows.reserve(c.rows.size() + 1);
  rows.push_back({"RESULT", "METRIC", "BASELINE", "CANDIDATE", "CHANGE", "RATIO", "VERDICT", "NOTE"});
  for (const auto& r : c.rows) {
    // Names and notes come from the reports (a result's error text among them): one terminal line each.
    rows.push_back({terminal_text(r.benchmark + "/" + r.result), terminal_text(r.metric),
                    r.baseline ? format_value(*r.baseline) : "-",
                    r.candidate ? format_value(*r.candidate) : "-", r.change ? format_change(*r.change) : "-",
                    r.ratio ? format_ratio(*r.ratio) : "-", std::string(to_string(r.verdict)),
                    terminal_text(r.reason)});
  }
  std::array<std::size_t, kColumns> width{};
  for (const auto& row : rows)
    for (std::size_t i = 0; i < kColumns; ++i) width[i] = std::max(width[i], display_width(row[i]));
  // Numbers right-aligned, text left-aligned; the last column is not padded.
  constexpr std::array<bool, kColumns> right = {false, false, true, true, true, true, false, false};

  std::string out;
  out += fmt::format("baseline:  {}{}\n", c.baseline.source,
                     c.baseline.label.empty() ? "" : "  (" + terminal_text(c.baseline.label) + ")");
  out += fmt::format("candidate: {}{}\n", c.candidate.source,
                     c.candidate.label.empty() ? "" : "  (" + terminal_text(c.candidate.label) + ")");
  for (const auto& w : c.warnings) out += "warning: " + terminal_text(w) + "\n";
  out += "\n";
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < kColumns; ++i) {
      if (i) line += "  ";
      if (i + 1 == kColumns)
        line += row[i];
      else
        line += right[i] ? pad_left(row[i], width[i]) : pad_right(row[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  out += "\n";
  out += c.summary_line();
  out += "\n";
  if (c.exit_status())
    out += fmt::format("gate: FAIL ({} failing) -> exit 1\n", c.failures());
  else
    out += "gate: pass -> exit 0\n";
  return out;
}

}  // namespace fb::reports
