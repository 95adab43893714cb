// factorybench report REPORT...: renders reports as Markdown, HTML (inline SVG charts), JUnit XML or
// Prometheus text. Needs no device and no MPI. Several reports render side by side (a trend over runs).
#include <iostream>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "reports/report_json.hpp"
#include "reports/report_printers.hpp"
#include "tools/commands.hpp"

namespace fb::tools {
namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string format = "md";
};

int run_report(const ReportOptions& opt, Session& session) {
  const auto format = reports::parse_report_format(opt.format);
  if (session.is_root()) session.check_output_writable(opt.inputs);
  std::vector<reports::NamedReport> inputs;
  for (const auto& path : opt.inputs) {
    inputs.push_back({path, reports::read_report(path)});
    // A JUnit file of no testcase, or "0 steps, all ok", would pass a CI gate on a run that measured nothing.
    if (inputs.back().report.results.empty())
      throw input_error(fmt::format("{}: the report has no results, so there is nothing to render", path));
    // A trend would line two copies up in one row, Prometheus would print the same series twice.
    reports::check_unique_results(inputs.back().report, path);
    if (inputs.back().report.schema != reports::kSchemaV1)  // as compare warns
      log::warn("{}: schema {}, this build reads {}: fields it does not know are left out", path,
                inputs.back().report.schema, reports::kSchemaV1);
  }
  if (!session.is_root()) return 0;
  const std::string text = reports::render_report(inputs, format);
  const std::string output = session.rendering_output();
  if (output.empty()) {
    std::cout << text << std::flush;
  } else {
    write_file_atomic(output, text);
    log::info("{} report of {} input{} written to {}", opt.format, inputs.size(),
              inputs.size() == 1 ? "" : "s", output);
  }
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto opt = std::make_shared<ReportOptions>();
  auto* sub = app.add_subcommand(
      "report", "Render reports as Markdown, HTML with charts, JUnit XML, Prometheus text or a summary");
  sub->add_option("reports", opt->inputs, "Report files; several render side by side, in the order given")
      ->required();
  sub->add_option(
         "--format", opt->format,
         "md (default): tables per benchmark; html: one self-contained page with SVG charts; junit: one "
         "testcase per result; prometheus: text exposition for node_exporter's textfile collector; summary: "
         "one "
         "line per suite step (or benchmark) with its headline figure and verdict")
      ->check(CLI::IsMember({"md", "markdown", "html", "junit", "prometheus", "summary"}));
  sub->footer(
      "Output: stdout, or with -o/--output FILE the rendering is written to FILE (atomically).\n"
      "Exit status: 0 rendered; 2 usage or input error (a malformed report names the file and JSON path; a "
      "report with no results); 3 the rendering failed to write (-o FILE or stdout; an -o directory that is "
      "missing or not writable is exit 2, up front).");
  return {sub, [opt](Session& s) { return run_report(*opt, s); }};
}

}  // namespace fb::tools
