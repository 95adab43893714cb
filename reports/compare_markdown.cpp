// A comparison as GitHub-flavoured Markdown: header, warnings, summary, one table row per metric.
#include <fmt/format.h>

#include "reports/compare_printers.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {

std::string render_compare_markdown(const Comparison& c) {
  std::string out = "## factorybench compare\n\n";
  out += "| | report | description |\n|---|---|---|\n";
  out += fmt::format("| baseline | {} | {} |\n", md_code_cell(c.baseline.source), md_cell(c.baseline.label));
  out += fmt::format("| candidate | {} | {} |\n\n", md_code_cell(c.candidate.source),
                     md_cell(c.candidate.label));
  // One paragraph per warning: consecutive "> " lines are one paragraph in CommonMark, run together.
  for (std::size_t i = 0; i < c.warnings.size(); ++i)
    out += (i ? ">\n" : "") + std::string("> **Warning:** ") + md_cell(c.warnings[i]) + "\n";
  if (!c.warnings.empty()) out += "\n";
  out += fmt::format("**{}** — {}\n\n", c.exit_status() ? "FAIL" : "PASS", c.summary_line());
  const bool reference = c.baseline.reference;
  out += fmt::format("| result | metric | {} | candidate | change | {} | verdict | note |\n",
                     reference ? "published" : "baseline", reference ? "fraction of published" : "ratio");
  out += "|---|---|---:|---:|---:|---:|---|---|\n";
  for (const auto& r : c.rows) {
    const std::string verdict(to_string(r.verdict));
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", md_cell(r.benchmark + "/" + r.result),
                       md_cell(r.metric), r.baseline ? format_value(*r.baseline) : "–",
                       r.candidate ? format_value(*r.candidate) : "–",
                       r.change ? format_change(*r.change) : "–", r.ratio ? format_ratio(*r.ratio) : "–",
                       r.fails ? "**" + verdict + "**" : verdict, md_cell(r.reason));
  }
  return out;
}

}  // namespace fb::reports
