#include "reports/burnin_console.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fb::reports {

void print_burnin_report(std::ostream& out, const Report& report) {
  const auto& summary =
      report.summary.contains("burnin") ? report.summary.at("burnin") : nlohmann::json::object();
  for (const auto& r : report.results) {
    if (r.benchmark != "burnin") continue;
    const auto host = r.params.value("host", std::string());
    const auto& ranks = r.extra.at("ranks");
    std::vector<std::string> bad;
    for (const auto& p : r.extra.at("problems")) {
      int local_rank = 0;
      for (const auto& k : ranks)
        if (k.at("rank") == p.at("rank")) local_rank = k.at("local_rank").get<int>();
      bad.push_back(fmt::format("rank {} ({}, GPU {}): {} (first seen at {:.1f} s)", p.at("rank").get<int>(),
                                host, local_rank, p.at("reason").get<std::string>(),
                                p.at("first_seen_s").get<double>()));
    }
    const auto* tflops = r.metric("tflops");
    out << (bad.empty() ? fmt::format("node {}: PASS ({} rank(s), {} checks, {:.3g} TFLOP/s)\n", host,
                                      ranks.size(), summary.value("checks", 0), tflops ? tflops->value : 0.0)
                        : fmt::format("node {}: FAIL {}\n", host, fmt::join(bad, "; ")));
  }
  out << (summary.value("verdict", std::string()) == "pass" ? "burnin: PASS\n" : "burnin: FAIL\n");
}

}  // namespace fb::reports
