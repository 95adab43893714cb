// factorybench compare BASELINE CANDIDATE: the CI gate. Needs no device and no MPI: it reads two reports,
// compares them (reports/compare.hpp) and renders the verdicts (reports/compare_printers.hpp).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "reports/compare.hpp"
#include "reports/compare_printers.hpp"
#include "reports/compare_rules.hpp"
#include "reports/report_json.hpp"
#include "tools/commands.hpp"

namespace fb::tools {
namespace {

struct CompareOptions {
  std::string baseline;
  std::string candidate;
  std::string rules;
  std::string tolerance;
  std::string format = "table";
  bool fail_on_missing = false;
};

int run_compare(const CompareOptions& opt, Session& session) {
  // Options first (usage errors), then files (input errors): nothing is written before both are valid.
  const auto format = reports::parse_compare_format(opt.format);
  if (session.is_root()) session.check_output_writable({opt.baseline, opt.candidate, opt.rules});
  reports::CompareRules rules;
  if (!opt.rules.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(opt.rules, ec))
      throw usage_error(fmt::format("invalid --rules {}: no such file", opt.rules));
    rules = reports::read_compare_rules(opt.rules);
  }
  if (!opt.tolerance.empty()) rules.tolerance = reports::parse_tolerance(opt.tolerance, "--tolerance");
  rules.fail_on_missing = rules.fail_on_missing || opt.fail_on_missing;

  const auto baseline = reports::read_report(opt.baseline);
  const auto candidate = reports::read_report(opt.candidate);
  const auto comparison = reports::compare_reports(baseline, candidate, rules, opt.baseline, opt.candidate);
  if (!session.is_root()) return comparison.exit_status();

  const std::string text = reports::render_compare(comparison, format);
  const std::string output = session.rendering_output();
  if (!output.empty()) {
    write_file_atomic(output, text);
    for (const auto& w : comparison.warnings) log::warn("{}", w);
    log::info("{}; {} written to {}", comparison.summary_line(), opt.format, output);
  } else {
    if (format != reports::CompareFormat::table)
      for (const auto& w : comparison.warnings) log::warn("{}", w);
    std::cout << text << std::flush;
  }
  // A failed gate says why on the console, whatever the log level (a failed gate is an error), unless the
  // table just printed it: the rows that fail, the first five.
  if (comparison.exit_status() && (!output.empty() || format != reports::CompareFormat::table)) {
    std::size_t shown = 0;
    for (const auto& row : comparison.rows) {
      if (!row.fails || ++shown > 5) continue;
      log::error("gate FAIL: {}/{} {}: {} ({})", row.benchmark, row.result, row.metric,
                 reports::to_string(row.verdict), row.reason);
    }
    if (shown > 5) log::error("... and {} more failing (see the comparison)", shown - 5);
  }
  return comparison.exit_status();
}

}  // namespace

Command add_compare_command(CLI::App& app) {
  auto opt = std::make_shared<CompareOptions>();
  auto* sub = app.add_subcommand("compare", "Compare two reports metric by metric: the CI gate");
  sub->add_option("baseline", opt->baseline, "Baseline report (an earlier run, or configs/references/*.json)")
      ->required();
  sub->add_option("candidate", opt->candidate, "Candidate report (the run under test)")->required();
  sub->add_option(
      "--rules", opt->rules,
      "JSON rules: default tolerance, per-result/metric tolerances (globs; relative, or absolute in "
      "the metric's unit), floors and ceilings (docs/reports.md)");
  sub->add_option("--tolerance", opt->tolerance,
                  "Default relative tolerance, e.g. 5% or 0.05 (overrides the rules file's; default 5%)");
  sub->add_flag("--fail-on-missing", opt->fail_on_missing,
                "A result or metric of the baseline missing from the candidate fails the gate");
  sub->add_option("--format", opt->format,
                  "Output: table (default), md, json or junit (one testcase per metric)")
      ->check(CLI::IsMember({"table", "md", "markdown", "json", "junit"}));
  sub->footer(
      "Verdicts: SAME (within tolerance or noise), BETTER, WORSE, AMBIGUOUS (too noisy to tell), INFO "
      "(metric\n"
      "without direction, in either report), MISSING (baseline only), NEW (candidate only). Floors and "
      "ceilings from --rules "
      "turn\n"
      "a value that breaks them into WORSE.\n"
      "Output: stdout, or with -o/--output FILE the rendering in --format is written to FILE (atomically).\n"
      "Exit status: 0 no regression; 1 at least one WORSE (or MISSING with --fail-on-missing); 2 usage or\n"
      "input error (a malformed report names the file and JSON path; incompatible reports: no result in\n"
      "common, a metric in different units or opposite directions, or nothing judged: every metric in common "
      "ignored by the\n"
      "rules or skipped by the candidate, with no floor, ceiling or --fail-on-missing to gate the rest);\n"
      "3 writing the rendering failed (-o FILE or stdout; an -o directory that is missing or not\n"
      "writable is exit 2, before comparing).\n"
      "Different schema versions, backends, world sizes or devices compare with a warning, as do results\n"
      "in common whose defining parameters differ (simulate's window and costs, a resilience job's\n"
      "training options, train's recomputation and optimizer).");
  return {sub, [opt](Session& s) { return run_compare(*opt, s); }};
}

}  // namespace fb::tools
