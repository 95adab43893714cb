#include "reports/locate_console.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/units.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

std::string test_of(const Result& r) {
  return r.benchmark == "locate" ? r.params.value("test", std::string()) : std::string();
}

void print_matrix(std::ostream& out, const Result& r) {
  const auto& m = r.extra.at("matrix");
  const auto& endpoints = r.extra.at("endpoints");
  out << fmt::format("p2p bandwidth GB/s at {} (row = sender, column = receiver):\n",
                     format_bytes(m.at("bytes").get<std::uint64_t>()));
  out << fmt::format("{:>8}", "");
  for (const auto& e : endpoints) out << fmt::format("{:>9}", fmt::format("r{}", e.at("rank").get<int>()));
  out << "\n";
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    out << fmt::format("{:>8}", fmt::format("r{}", endpoints[i].at("rank").get<int>()));
    for (std::size_t j = 0; j < endpoints.size(); ++j) {
      // A non-finite figure is stored as null.
      const auto& v = m.at("bw_gbps")[i][j];
      out << (i == j ? fmt::format("{:>9}", "-")
                     : fmt::format("{:>9.3g}", v.is_number() ? v.get<double>() : std::nan("")));
    }
    out << "\n";
  }
}

std::vector<std::string> bisection_lines(const Result& r) {
  std::vector<std::string> lines;
  const auto& rounds = r.extra.at("rounds");
  for (std::size_t i = 0; i < rounds.size(); ++i) {
    std::string parts;
    for (const auto& g : rounds[i]) {
      std::string hosts;
      for (const auto& h : g.at("hosts")) {
        if (!hosts.empty()) hosts += ',';
        hosts += h.get<std::string>();
      }
      const auto& bw = g.at("busbw_gbps");
      parts += fmt::format("{}[{}] {}{}", parts.empty() ? "" : "  ", hosts,
                           bw.is_number() ? fmt::format("{:.3g} GB/s", bw.get<double>()) : "n/a",
                           g.at("below_floor").get<bool>() ? " LOW" : "");
    }
    lines.push_back(fmt::format("bisection round {}: {}", i, parts));
  }
  const auto& slow = r.extra.at("slow_nodes");
  if (slow.empty()) lines.push_back("bisection: no node drags its group below floor");
  for (const auto& h : slow)
    lines.push_back(
        fmt::format("slow node: {} drags its all-reduce group below floor", h.get<std::string>()));
  return lines;
}

}  // namespace

std::vector<std::string> p2p_verdict_lines(const Result& r) {
  std::vector<std::string> lines;
  const auto& v = r.extra.at("verdict");
  const auto& endpoints = r.extra.at("endpoints");
  const auto& labels = r.extra.at("matrix").at("labels");
  // Endpoints are named by their rank in the verdict, by their label on the console.
  auto label = [&](const json& ep) {
    for (std::size_t i = 0; i < endpoints.size(); ++i)
      if (endpoints[i].at("rank") == ep.at("rank")) return labels[i].get<std::string>();
    return fmt::format("rank {}", ep.at("rank").get<int>());
  };
  const auto median = [&] { return v.at("median_gbps").get<double>(); };
  for (const auto& e : v.at("slow_endpoints")) {
    int links = 0;
    for (const auto& f : v.at("flags"))
      links += f.at("from").at("rank") == e.at("rank") || f.at("to").at("rank") == e.at("rank");
    lines.push_back(fmt::format("slow endpoint: {}: {} of {} directions flagged, median {:.3g} GB/s",
                                label(e), links, 2 * (endpoints.size() - 1), median()));
  }
  for (const auto& l : v.at("slow_links")) {
    const auto& a = l.at("a").at("rank");
    const auto& b = l.at("b").at("rank");
    std::string why;
    for (const auto& f : v.at("flags")) {
      const auto& from = f.at("from").at("rank");
      const auto& to = f.at("to").at("rank");
      if ((from == a && to == b) || (from == b && to == a))
        why += fmt::format("{}{}->{} {:.3g} GB/s {}", why.empty() ? "" : "; ", from == a ? "a" : "b",
                           to == a ? "a" : "b", f.at("bw_gbps").get<double>(),
                           f.at("reason").get<std::string>());
    }
    lines.push_back(fmt::format("slow link: a = {} <-> b = {}: {}", label(l.at("a")), label(l.at("b")), why));
  }
  if (endpoints.size() < 2)
    lines.push_back(fmt::format("p2p: {} endpoint(s), no pair to measure", endpoints.size()));
  else if (lines.empty())
    lines.push_back(fmt::format("p2p: no slow link or endpoint among {} endpoints (median {:.3g} GB/s)",
                                endpoints.size(), median()));
  return lines;
}

void print_locate_report(std::ostream& out, const Report& report) {
  std::vector<std::string> lines;
  bool verdict_seen = false, named = false;
  for (const auto& r : report.results) {
    const auto test = test_of(r);
    if (test.empty()) continue;
    named = named || r.status == Status::failed;
    if (test == "p2p") {
      print_matrix(out, r);
      // A sweep repeating its largest size carries the verdict twice; it is said once.
      if (r.extra.contains("verdict") && !verdict_seen) {
        verdict_seen = true;
        for (auto& l : p2p_verdict_lines(r)) lines.push_back(std::move(l));
      }
    } else if (test == "bisection") {
      for (auto& l : bisection_lines(r)) lines.push_back(std::move(l));
    } else if (test == "transport") {
      lines.push_back("transport: " + (r.status == Status::failed && r.error
                                           ? *r.error
                                           : r.extra.value("summary", std::string())));
    }
  }
  for (const auto& l : lines) out << l << "\n";
  out << (named ? "locate: FAIL\n" : "locate: PASS\n");
}

void print_locate_hang(std::ostream& out, const Result& hang) {
  for (const auto& l : hang.extra.at("diagnosis")) out << "hang: " << l.get<std::string>() << "\n";
  out << "locate: FAIL (hang; rank states in " << hang.params.value("run_dir", std::string()) << ")\n";
}

}  // namespace fb::reports
