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
    out << (bad.empty()
                ? fmt::format("node {}: PASS ({} rank(s), {} checks after the reference, {:.3g} TFLOP/s)\n",
                              host, ranks.size(), summary.value("checks", 0), tflops ? tflops->value : 0.0)
                : fmt::format("node {}: FAIL {}\n", host, fmt::join(bad, "; ")));
  }
  out << (summary.value("verdict", std::string()) == "pass" ? "burnin: PASS\n" : "burnin: FAIL\n");
}

}  // namespace fb::reports
