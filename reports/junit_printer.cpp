// Reports as JUnit XML: one <testsuite> per (report, benchmark), one <testcase> per result. A failed result
// is a <failure> with its error, a skipped (waived) one is <skipped>; the metrics go to <system-out>.
#include <algorithm>

#include <fmt/format.h>

#include "reports/compare.hpp"
#include "reports/report_printers.hpp"
#include "reports/report_view.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {

std::string render_junit(const std::vector<NamedReport>& reports) {
  std::size_t tests = 0, failures = 0, skipped = 0;
  for (const auto& nr : reports)
    for (const auto& r : nr.report.results) {
      ++tests;
      failures += r.status == Status::failed ? 1 : 0;
      skipped += r.status == Status::skipped ? 1 : 0;
    }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"factorybench\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n", tests,
      failures, skipped);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const Report& rep = reports[i].report;
    const RunFacts f = run_facts(rep);
    std::vector<std::string> benches;
    for (const auto& r : rep.results)
      if (std::find(benches.begin(), benches.end(), r.benchmark) == benches.end())
        benches.push_back(r.benchmark);
    for (const auto& bench : benches) {
      const auto results = results_of(rep, bench);
      std::size_t nf = 0, ns = 0;
      for (const Result* r : results) {
        nf += r->status == Status::failed ? 1 : 0;
        ns += r->status == Status::skipped ? 1 : 0;
      }
      const std::string suite = reports.size() > 1 ? run_label(reports, i) + "." + bench : bench;
      out += fmt::format(
          "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\"{}>\n",
          xml_escape(suite), results.size(), nf, ns,
          f.started_at.empty() ? std::string() : fmt::format(" timestamp=\"{}\"", xml_escape(f.started_at)));
      out += "    <properties>\n";
      out += fmt::format("      <property name=\"source\" value=\"{}\"/>\n", xml_escape(reports[i].source));
      if (!f.id.empty())
        out += fmt::format("      <property name=\"run\" value=\"{}\"/>\n", xml_escape(f.id));
      if (!f.backend.empty())
        out += fmt::format("      <property name=\"backend\" value=\"{}\"/>\n", xml_escape(f.backend));
      out += "    </properties>\n";
      for (const Result* r : results) {
        // classname + name identify a test to Jenkins and GitLab: with several runs, the run is part of it,
        // or the same result of two runs would be one test's history.
        out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n", xml_escape(suite),
                           xml_escape(r->name));
        if (r->status == Status::failed)
          out += fmt::format("      <failure type=\"failed\" message=\"{}\"/>\n",
                             xml_escape(r->error.value_or("failed")));
        else if (r->status == Status::skipped)
          out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(r->error.value_or("skipped")));
        std::string metrics;
        for (const auto& [name, m] : r->metrics)
          metrics += fmt::format("{} = {} {}\n", name, format_value(m.value), m.unit);
        if (!metrics.empty()) out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(metrics));
        out += "    </testcase>\n";
      }
      out += "  </testsuite>\n";
    }
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace fb::reports
