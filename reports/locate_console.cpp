#include "reports/locate_console.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/units.hpp"
#include "reports/locate_extra.hpp"

namespace fb::reports {
namespace {

std::string test_of(const Result& r) {
  return r.benchmark == "locate" ? r.params.value("test", std::string()) : std::string();
}

void print_matrix(std::ostream& out, const Result& r) {
  const auto x = read_p2p_extra(r);
  const auto& m = x.matrix;
  const auto& endpoints = x.endpoints;
  out << fmt::format("p2p bandwidth GB/s at {} (row = sender, column = receiver):\n", format_bytes(m.bytes));
  out << fmt::format("{:>8}", "");
  for (const auto& e : endpoints) out << fmt::format("{:>9}", fmt::format("r{}", e.rank));
  out << "\n";
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    out << fmt::format("{:>8}", fmt::format("r{}", endpoints[i].rank));
    for (std::size_t j = 0; j < endpoints.size(); ++j)
      out << (i == j ? fmt::format("{:>9}", "-") : fmt::format("{:>9.3g}", m.bw_gbps.at(i).at(j)));
    out << "\n";
  }
}

// "[a,b] 5.2 GB/s  [c] n/a  [d,e] 0.1 GB/s LOW"
std::string group_parts(const std::vector<BisectionGroupExtra>& groups) {
  std::string parts;
  for (const auto& g : groups) {
    std::string hosts;
    for (const auto& h : g.hosts) {
      if (!hosts.empty()) hosts += ',';
      hosts += h;
    }
    parts += fmt::format("{}[{}] {}{}", parts.empty() ? "" : "  ", hosts,
                         std::isnan(g.busbw_gbps) ? "n/a" : fmt::format("{:.3g} GB/s", g.busbw_gbps),
                         g.below_floor ? " LOW" : "");
  }
  return parts;
}

std::vector<std::string> bisection_lines(const Result& r) {
  std::vector<std::string> lines;
  const auto x = read_bisection_extra(r);
  for (std::size_t i = 0; i < x.rounds.size(); ++i)
    lines.push_back(fmt::format("bisection round {}: {}", i, group_parts(x.rounds[i])));
  if (!x.cross_pairs.empty())
    lines.push_back(
        fmt::format("bisection cross-check (named node, node not named): {}", group_parts(x.cross_pairs)));
  if (r.status == Status::skipped)
    lines.push_back("bisection: SKIP (" + r.error.value_or("nothing measured") + ")");
  else if (x.slow_nodes.empty())
    lines.push_back("bisection: no node drags its group below floor");
  for (const auto& h : x.slow_nodes)
    lines.push_back(fmt::format("slow node: {} drags its all-reduce group below floor", h));
  return lines;
}

}  // namespace

std::vector<std::string> p2p_verdict_lines(const Result& r) {
  std::vector<std::string> lines;
  const auto x = read_p2p_extra(r);
  if (!x.verdict)
    throw input_error("result locate/" + r.name + ": $.extra: missing required field \"verdict\"");
  const auto& v = *x.verdict;
  const auto& endpoints = x.endpoints;
  const auto& labels = x.matrix.labels;
  // Endpoints are named by their rank in the verdict, by their label on the console.
  auto label = [&](const LocateEndpoint& ep) {
    for (std::size_t i = 0; i < endpoints.size(); ++i)
      if (endpoints[i].rank == ep.rank) return labels.at(i);
    return fmt::format("rank {}", ep.rank);
  };
  for (const auto& e : v.slow_endpoints) {
    int links = 0;
    for (const auto& f : v.flags) links += f.from.rank == e.rank || f.to.rank == e.rank;
    lines.push_back(fmt::format("slow endpoint: {}: {} of {} directions flagged, reference {:.3g} GB/s",
                                label(e), links, 2 * (endpoints.size() - 1), v.reference_gbps));
  }
  for (const auto& [a, b] : v.slow_links) {
    std::string why;
    for (const auto& f : v.flags) {
      const int from = f.from.rank, to = f.to.rank;
      if ((from == a.rank && to == b.rank) || (from == b.rank && to == a.rank))
        why += fmt::format("{}{}->{} {:.3g} GB/s {}", why.empty() ? "" : "; ", from == a.rank ? "a" : "b",
                           to == a.rank ? "a" : "b", f.bw_gbps, f.reason);
    }
    lines.push_back(fmt::format("slow link: a = {} <-> b = {}: {}", label(a), label(b), why));
  }
  if (endpoints.size() < 2 || (lines.empty() && r.status == Status::skipped))
    lines.push_back("p2p: SKIP (" +
                    r.error.value_or(fmt::format("{} endpoint(s), no pair to measure", endpoints.size())) +
                    ")");
  else if (lines.empty())
    lines.push_back(fmt::format("p2p: no slow link or endpoint among {} endpoints (reference {:.3g} GB/s)",
                                endpoints.size(), v.reference_gbps));
  return lines;
}

void print_locate_report(std::ostream& out, const Report& report) {
  std::vector<std::string> lines;
  bool verdict_seen = false, named = false, measured = false;
  for (const auto& r : report.results) {
    const auto test = test_of(r);
    if (test.empty()) continue;
    named = named || r.status == Status::failed;
    measured = measured || r.status != Status::skipped;
    if (test == "p2p") {
      print_matrix(out, r);
      // A sweep repeating its largest size carries the verdict twice; it is said once.
      if (has_p2p_verdict(r) && !verdict_seen) {
        verdict_seen = true;
        for (auto& l : p2p_verdict_lines(r)) lines.push_back(std::move(l));
      }
    } else if (test == "bisection") {
      for (auto& l : bisection_lines(r)) lines.push_back(std::move(l));
    } else if (test == "transport") {
      lines.push_back("transport: " + (r.status == Status::skipped ? "SKIP (" + r.error.value_or("") + ")"
                                       : r.status == Status::failed && r.error
                                           ? *r.error
                                           : read_transport_extra(r).summary));
    }
  }
  for (const auto& l : lines) out << l << "\n";
  // Nothing judged (nothing measured, or a bisection with nothing to compare against) is not a pass: said as
  // a skip (the exit status stays 0: nothing was named).
  out << (named ? "locate: FAIL\n" : measured ? "locate: PASS\n" : "locate: SKIP (nothing judged)\n");
}

void print_hang(std::ostream& out, const Result& hang) {
  for (const auto& l : read_hang_extra(hang).diagnosis) out << "hang: " << l << "\n";
  out << hang.benchmark << ": FAIL (hang; rank states in " << hang.params.value("run_dir", std::string())
      << ")\n";
}

}  // namespace fb::reports
