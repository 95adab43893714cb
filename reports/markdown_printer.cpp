// Reports as GitHub-flavoured Markdown. One report: per benchmark a table with one row per result and one
// column per metric (and for train, the step's breakdown and collectives). Several reports: per benchmark a
// trend table with one row per (result, metric) and one column per report, plus the change from the first
// report to the last.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "reports/compare.hpp"
#include "reports/gpu_slowdown.hpp"
#include "reports/report_printers.hpp"
#include "reports/report_view.hpp"
#include "reports/text_format.hpp"
#include "reports/train_extra.hpp"

namespace fb::reports {
namespace {

std::string runs_table(const std::vector<NamedReport>& reports) {
  std::string out =
      "| run | id | command | backend | ranks | device | started |\n|---|---|---|---|---:|---|---|\n";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const RunFacts f = run_facts(reports[i].report);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", md_cell(run_label(reports, i)),
                       md_cell(f.reference ? "reference: " + f.title : f.id),
                       f.command.empty() ? std::string() : md_code_cell(f.command), md_cell(f.backend),
                       f.world_size ? std::to_string(*f.world_size) : "", md_cell(f.device),
                       md_cell(f.started_at));
  }
  return out;
}

std::string single_table(const Report& report, const std::vector<NamedReport>& all,
                         const std::string& bench) {
  const auto columns = metric_columns(all, bench);
  std::string out = "| result | status |";
  std::string rule = "|---|---|";
  std::vector<std::string> units;
  for (const auto& c : columns) {
    units.push_back(metric_unit(all, bench, c));
    out += fmt::format(" {} |", md_cell(metric_heading(c, units.back())));
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (const Result* r : results_of(report, bench)) {
    std::string status(to_string(r->status));
    if (is_dry_run(*r)) status += " (dry run: planned, not measured)";
    if (r->error) status += fmt::format(": {}", *r->error);
    out += fmt::format("| {} | {} |", md_cell(r->name), md_cell(status));
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const Metric* m = r->metric(columns[i]);
      out += fmt::format(" {} |", m ? md_cell(value_cell(*m, units[i])) : std::string("–"));
    }
    out += "\n";
  }
  return out;
}

// Where a training step's time went (extra.breakdown, the HTML chart's data) and the collectives it ran
// (extra.collective_calls_per_step, collective_bytes_per_step): one row per train result that ran.
std::string train_step_table(const Report& report) {
  // Columns: the categories a result measured, in the order results declare them, then any others.
  std::vector<std::string> categories;
  const auto add = [&](const std::string& c) {
    if (std::find(categories.begin(), categories.end(), c) == categories.end()) categories.push_back(c);
  };
  std::vector<std::pair<const Result*, TrainBreakdown>> rows;
  for (const Result* r : results_of(report, "train")) {
    auto b = find_train_breakdown(*r);
    if (!b || b->seconds.empty()) continue;
    for (const auto& c : b->categories)
      if (b->seconds.count(c)) add(c);
    for (const auto& [c, v] : b->seconds) add(c);
    rows.emplace_back(r, std::move(*b));
  }
  if (rows.empty()) return "";
  std::string out =
      "\nMedian seconds per step by category (`extra.breakdown`), and the collectives of a step\n\n";
  std::string rule = "|---|";
  out += "| result |";
  for (const auto& c : categories) {
    out += fmt::format(" {} (s) |", md_cell(c));
    rule += "---:|";
  }
  out += " collectives per step |\n" + rule + "---|\n";
  for (const auto& [r, b] : rows) {
    out += fmt::format("| {} |", md_cell(r->name));
    for (const auto& c : categories)
      out += b.seconds.count(c) ? fmt::format(" {} |", format_value(b.seconds.at(c))) : std::string(" – |");
    // The typed reader: a hand-edited extra it refuses leaves this cell empty, not the whole rendering (the
    // breakdown above is read as leniently as the HTML chart reads it).
    std::optional<TrainRunExtra> run;
    try {
      run = read_train_extra(*r).run;
    } catch (const Error&) {
    }
    std::string comm = "–";
    if (run) {
      double bytes = 0, calls = 0;
      for (const auto& [name, v] : run->collective_bytes_per_step) bytes += v;
      for (const auto& [name, v] : run->collective_calls_per_step) calls += v;
      comm = format_bytes(static_cast<std::uint64_t>(bytes));
      if (!run->collective_calls_per_step.empty()) comm += fmt::format(" in {:.0f} calls", calls);
    }
    out += fmt::format(" {} |\n", md_cell(comm));
  }
  return out;
}

std::string trend_table(const std::vector<NamedReport>& reports, const std::string& bench) {
  std::string out = "| result | metric |";
  std::string rule = "|---|---|";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    out += fmt::format(" {} |", md_cell(run_label(reports, i)));
    rule += "---:|";
  }
  out += " change |\n" + rule + "---:|\n";
  for (const auto& row : trend_rows(reports, bench)) {
    out += fmt::format("| {} | {} |", md_cell(row.result), md_cell(trend_metric_heading(row)));
    for (std::size_t i = 0; i < reports.size(); ++i) out += fmt::format(" {} |", md_cell(trend_cell(row, i)));
    const auto change = trend_change(row);
    out += fmt::format(" {} |\n", change ? format_change(*change) : std::string("–"));
  }
  // What did not pass, and why: the table has no room for the errors.
  const auto problems = trend_problems(reports, bench);
  if (!problems.empty()) out += "\n";
  for (const auto& p : problems)
    out += fmt::format("- {}: {} {}{}\n", md_cell(run_label(reports, p.report)), md_cell(p.result),
                       to_string(p.status), p.error.empty() ? std::string() : ": " + md_cell(p.error));
  return out;
}

}  // namespace

ReportFormat parse_report_format(std::string_view text) {
  if (text == "md" || text == "markdown") return ReportFormat::markdown;
  if (text == "html") return ReportFormat::html;
  if (text == "junit") return ReportFormat::junit;
  if (text == "prometheus") return ReportFormat::prometheus;
  if (text == "summary") return ReportFormat::summary;
  throw usage_error("invalid --format '" + std::string(text) +
                    "': expected md, html, junit, prometheus or summary");
}

std::string render_report(const std::vector<NamedReport>& reports, ReportFormat format) {
  switch (format) {
    case ReportFormat::markdown:
      return render_markdown(reports);
    case ReportFormat::html:
      return render_html(reports);
    case ReportFormat::junit:
      return render_junit(reports);
    case ReportFormat::prometheus:
      return render_prometheus(reports);
    case ReportFormat::summary:
      return render_summary(reports);
  }
  return render_markdown(reports);
}

std::string render_markdown(const std::vector<NamedReport>& reports) {
  std::string out = "# factorybench report\n\n";
  out += runs_table(reports);
  // Throttling changes what the figures mean: said before them, each warning its own paragraph.
  std::vector<std::string> warnings;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (auto& w : slowdown_warnings(reports[i].report))
      warnings.push_back(reports.size() > 1 ? run_label(reports, i) + ": " + w : std::move(w));
  for (std::size_t i = 0; i < warnings.size(); ++i)
    out += (i ? ">\n" : "\n") + std::string("> **Warning:** ") + md_cell(warnings[i]) + "\n";
  const bool single = reports.size() == 1;
  for (const auto& bench : benchmark_order(reports)) {
    std::size_t n = 0, failed = 0;
    for (const auto& nr : reports)
      for (const Result* r : results_of(nr.report, bench)) {
        ++n;
        failed += r->status == Status::failed ? 1 : 0;
      }
    out += fmt::format("\n## {}\n\n{} result{}{}\n\n", md_cell(bench), n, n == 1 ? "" : "s",
                       failed ? fmt::format(", **{} failed**", failed) : std::string());
    out += single ? single_table(reports[0].report, reports, bench) : trend_table(reports, bench);
    if (single && bench == "train") out += train_step_table(reports[0].report);
  }
  return out;
}

}  // namespace fb::reports
