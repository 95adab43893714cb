#pragma once
// Renderings of one or several reports (`factorybench report`), one printer per file:
// markdown_printer.cpp (summary tables per benchmark), html_printer.cpp (one self-contained page with inline
// SVG charts), junit_printer.cpp (one testcase per result), prometheus_printer.cpp (text exposition for
// node_exporter's textfile collector). Several reports render side by side, in the order given (a trend).
#include <string>
#include <string_view>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct NamedReport {
  std::string source;  // the file it came from (labels the run)
  Report report;
};

enum class ReportFormat { markdown, html, junit, prometheus, summary };
// "md" (or "markdown"), "html", "junit", "prometheus", "summary"; throws a usage Error naming --format
// otherwise.
ReportFormat parse_report_format(std::string_view text);

std::string render_markdown(const std::vector<NamedReport>& reports);
std::string render_html(const std::vector<NamedReport>& reports);
std::string render_junit(const std::vector<NamedReport>& reports);
std::string render_prometheus(const std::vector<NamedReport>& reports);
// One line per step with its headline figure and verdict (reports/headline.hpp), per report.
std::string render_summary(const std::vector<NamedReport>& reports);
std::string render_report(const std::vector<NamedReport>& reports, ReportFormat format);

}  // namespace fb::reports
