#include "reports/burnin_console.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reports/burnin_extra.hpp"

namespace fb::reports {

void print_burnin_report(std::ostream& out, const Report& report) {
  const auto& summary =
      report.summary.contains("burnin") ? report.summary.at("burnin") : nlohmann::json::object();
  // A burn-in stopped before its last check (a signal, a time limit): a node with no mismatch so far has not
  // passed, it is not finished; one that mismatched has failed all the same.
  const int checks = summary.value("checks", 0);
  const int planned = summary.value("checks_planned", checks);
  const bool unfinished = checks < planned;
  for (const auto& r : report.results) {
    if (r.benchmark != "burnin") continue;
    const auto host = r.params.value("host", std::string());
    const auto x = read_burnin_extra(r);
    const auto& ranks = x.ranks;
    std::vector<std::string> bad;
    for (const auto& p : x.problems) {
      int local_rank = 0;
      for (const auto& k : ranks)
        if (k.rank == p.rank) local_rank = k.local_rank;
      bad.push_back(fmt::format("rank {} ({}, GPU {}): {} (first seen at {:.1f} s)", p.rank, host, local_rank,
                                p.reason, p.first_seen_s));
    }
    const auto* tflops = r.metric("tflops");
    const double rate = tflops ? tflops->value : 0.0;
    if (!bad.empty())
      out << fmt::format("node {}: FAIL {}\n", host, fmt::join(bad, "; "));
    else if (unfinished)
      out << fmt::format(
          "node {}: NOT FINISHED (no mismatch in {} of {} checks after the reference, {} rank(s), "
          "{:.3g} TFLOP/s)\n",
          host, checks, planned, ranks.size(), rate);
    else
      out << fmt::format("node {}: PASS ({} rank(s), {} checks after the reference, {:.3g} TFLOP/s)\n", host,
                         ranks.size(), checks, rate);
  }
  if (summary.value("verdict", std::string()) == "pass")
    out << "burnin: PASS\n";
  else if (unfinished)
    out << fmt::format("burnin: FAIL (stopped after {} of {} checks)\n", checks, planned);
  else
    out << "burnin: FAIL\n";
}

}  // namespace fb::reports
