// A comparison as JUnit XML: one <testsuite> per benchmark, one <testcase> per compared metric, so CI
// systems (GitLab, Jenkins, GitHub test reporters) list regressions natively. WORSE is a <failure>; MISSING
// is a <failure> with fail_on_missing, else <skipped>; every other verdict passes with its reason in
// <system-out>.
#include <map>
#include <vector>

#include <fmt/format.h>

#include "reports/compare_printers.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {

std::string render_compare_junit(const Comparison& c) {
  // Benchmarks in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const MetricComparison*>> by_bench;
  for (const auto& r : c.rows) {
    auto& v = by_bench[r.benchmark];
    if (v.empty()) order.push_back(r.benchmark);
    v.push_back(&r);
  }
  const auto skipped = [](const MetricComparison& r) { return r.verdict == Verdict::missing && !r.fails; };
  std::size_t total_failures = 0, total_skipped = 0;
  for (const auto& r : c.rows) {
    total_failures += r.fails ? 1 : 0;
    total_skipped += skipped(r) ? 1 : 0;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"factorybench compare\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
      c.rows.size(), total_failures, total_skipped);
  for (const auto& bench : order) {
    const auto& rows = by_bench[bench];
    std::size_t failures = 0, skips = 0;
    for (const auto* r : rows) {
      failures += r->fails ? 1 : 0;
      skips += skipped(*r) ? 1 : 0;
    }
    out += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
                       xml_escape(bench), rows.size(), failures, skips);
    out += "    <properties>\n";
    out += fmt::format("      <property name=\"baseline\" value=\"{}\"/>\n", xml_escape(c.baseline.source));
    out += fmt::format("      <property name=\"candidate\" value=\"{}\"/>\n", xml_escape(c.candidate.source));
    // The comparison's warnings (different backends, parameters, a one-sided direction) travel with the
    // results a CI server keeps, not only on the job's stderr.
    for (const auto& w : c.warnings)
      out += fmt::format("      <property name=\"warning\" value=\"{}\"/>\n", xml_escape(w));
    out += "    </properties>\n";
    for (const auto* r : rows) {
      const std::string detail = fmt::format(
          "{}: baseline {}, candidate {}, change {}, ratio {}: {}", to_string(r->verdict),
          r->baseline ? format_value(*r->baseline) : "-", r->candidate ? format_value(*r->candidate) : "-",
          r->change ? format_change(*r->change) : "-", r->ratio ? format_ratio(*r->ratio) : "-", r->reason);
      out += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">\n",
                         xml_escape(r->benchmark + "." + r->result), xml_escape(r->metric));
      if (r->fails)
        out += fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n", to_string(r->verdict),
                           xml_escape(r->reason), xml_escape(detail));
      else if (skipped(*r))
        out += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(r->reason));
      out += fmt::format("      <system-out>{}</system-out>\n", xml_escape(detail));
      out += "    </testcase>\n";
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

}  // namespace fb::reports
