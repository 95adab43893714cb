// `report --format summary`: one line per step with its headline figure and verdict, per report.
#include <fmt/format.h>

#include "reports/headline.hpp"
#include "reports/report_printers.hpp"
#include "reports/report_view.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {

std::string render_summary(const std::vector<NamedReport>& reports) {
  std::string out;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto lines = headlines(reports[i].report);
    std::size_t failed = 0, skipped = 0;
    for (const auto& h : lines) {
      failed += h.verdict == "FAILED" ? 1 : 0;
      skipped += h.verdict == "skipped" ? 1 : 0;
    }
    // A skipped step is not an ok one: "1 step, all ok" for a step that measured nothing read as a pass.
    std::string verdict = failed ? fmt::format("{} FAILED", failed) : std::string();
    if (skipped) verdict += fmt::format("{}{} skipped", verdict.empty() ? "" : ", ", skipped);
    if (verdict.empty()) verdict = "all ok";
    out += fmt::format("{}: {} step{}, {}\n", terminal_text(run_label(reports, i)), lines.size(),
                       lines.size() == 1 ? "" : "s", verdict);
    out += render_headlines(lines);
  }
  return out;
}

}  // namespace fb::reports
