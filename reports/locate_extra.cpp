#include "reports/locate_extra.hpp"

#include <cmath>

#include "reports/extra_cursor.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

json endpoint_json(const LocateEndpoint& e) {
  return {{"rank", e.rank}, {"host", e.host}, {"local_rank", e.local_rank}};
}

LocateEndpoint read_endpoint(const ExtraCursor& c) {
  return {c.at("rank").integer<int>(), c.at("host").str(), c.at("local_rank").integer<int>()};
}

json matrix_json(const std::vector<std::vector<double>>& m) {
  json out = json::array();
  for (const auto& row : m) {
    json r = json::array();
    for (double v : row) r.push_back(finite_or_null(v));
    out.push_back(r);
  }
  return out;
}

std::vector<std::vector<double>> read_matrix(const ExtraCursor& c) {
  return c.each([](const ExtraCursor& row) { return row.numbers(); });
}

P2pVerdictExtra read_verdict(const ExtraCursor& c) {
  P2pVerdictExtra v;
  v.median_gbps = c.at("median_gbps").num();
  // Reports before 2026-12-01 judged against the median of all directions.
  v.reference_gbps = c.object().contains("reference_gbps") ? c.at("reference_gbps").num() : v.median_gbps;
  v.slow_endpoints = c.at("slow_endpoints").each(read_endpoint);
  v.slow_links = c.at("slow_links").each([](const ExtraCursor& l) {
    return std::pair{read_endpoint(l.at("a")), read_endpoint(l.at("b"))};
  });
  v.flags = c.at("flags").each([](const ExtraCursor& f) {
    return P2pFlagExtra{read_endpoint(f.at("from")), read_endpoint(f.at("to")), f.at("bw_gbps").num(),
                        f.at("reason").str()};
  });
  return v;
}

}  // namespace

json p2p_verdict_json(const P2pVerdictExtra& v) {
  json j = {{"median_gbps", v.median_gbps},
            {"reference_gbps", v.reference_gbps},
            {"slow_endpoints", json::array()},
            {"slow_links", json::array()},
            {"flags", json::array()}};
  for (const auto& e : v.slow_endpoints) j["slow_endpoints"].push_back(endpoint_json(e));
  for (const auto& [a, b] : v.slow_links)
    j["slow_links"].push_back({{"a", endpoint_json(a)}, {"b", endpoint_json(b)}});
  for (const auto& f : v.flags)
    j["flags"].push_back({{"from", endpoint_json(f.from)},
                          {"to", endpoint_json(f.to)},
                          {"bw_gbps", f.bw_gbps},
                          {"reason", f.reason}});
  return j;
}

void write_p2p_extra(Result& r, const P2pExtra& x) {
  r.extra["matrix"] = {{"labels", x.matrix.labels},
                       {"bytes", x.matrix.bytes},
                       {"bw_gbps", matrix_json(x.matrix.bw_gbps)},
                       {"latency_us", matrix_json(x.matrix.latency_us)}};
  json endpoints = json::array();
  for (const auto& e : x.endpoints) endpoints.push_back(endpoint_json(e));
  r.extra["endpoints"] = endpoints;
  if (x.verdict) r.extra["verdict"] = p2p_verdict_json(*x.verdict);
}

P2pExtra read_p2p_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    P2pExtra x;
    const auto m = e.at("matrix");
    x.matrix = {m.at("labels").strings(), m.at("bytes").integer<std::uint64_t>(),
                read_matrix(m.at("bw_gbps")), read_matrix(m.at("latency_us"))};
    x.endpoints = e.at("endpoints").each(read_endpoint);
    if (e.has("verdict")) x.verdict = read_verdict(e.at("verdict"));
    return x;
  });
}

bool has_p2p_verdict(const Result& r) {
  return r.extra.is_object() && r.extra.contains("verdict");
}

namespace {

json group_json(const BisectionGroupExtra& g) {
  return {{"hosts", g.hosts},
          {"ranks", g.ranks},
          {"busbw_gbps", finite_or_null(g.busbw_gbps)},
          {"below_floor", g.below_floor}};
}

BisectionGroupExtra read_group(const ExtraCursor& g) {
  return BisectionGroupExtra{g.at("hosts").strings(), g.at("ranks").integer<int>(), g.at("busbw_gbps").num(),
                             g.at("below_floor").boolean()};
}

}  // namespace

void write_bisection_extra(Result& r, const BisectionExtra& x) {
  json rounds = json::array();
  for (const auto& round : x.rounds) {
    json groups = json::array();
    for (const auto& g : round) groups.push_back(group_json(g));
    rounds.push_back(groups);
  }
  r.extra["rounds"] = rounds;
  if (!x.cross_pairs.empty()) {
    json pairs = json::array();
    for (const auto& g : x.cross_pairs) pairs.push_back(group_json(g));
    r.extra["cross_pairs"] = pairs;
  }
  r.extra["slow_nodes"] = x.slow_nodes;
}

BisectionExtra read_bisection_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    BisectionExtra x;
    x.rounds = e.at("rounds").each([](const ExtraCursor& round) { return round.each(read_group); });
    if (e.has("cross_pairs")) x.cross_pairs = e.at("cross_pairs").each(read_group);
    x.slow_nodes = e.at("slow_nodes").strings();
    return x;
  });
}

void write_transport_extra(Result& r, const TransportExtra& x) {
  r.extra["record"] = x.record;
  r.extra["summary"] = x.summary;
}

TransportExtra read_transport_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    TransportExtra x;
    if (e.has("record")) x.record = e.at("record").object();
    if (e.has("summary")) x.summary = e.at("summary").str();
    return x;
  });
}

void write_hang_extra(Result& r, const HangExtra& x) {
  r.extra["diagnosis"] = x.diagnosis;
}

HangExtra read_hang_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) { return HangExtra{e.at("diagnosis").strings()}; });
}

std::optional<HeatmapMatrix> find_p2p_matrix(const Result& r) {
  const auto it = r.extra.find("matrix");
  if (it == r.extra.end() || !it->is_object() || !it->contains("labels") || !it->contains("bw_gbps"))
    return std::nullopt;
  HeatmapMatrix h;
  for (const auto& l : it->at("labels")) h.labels.push_back(l.is_string() ? l.get<std::string>() : l.dump());
  for (const auto& row : it->at("bw_gbps")) {
    std::vector<double> values;
    for (const auto& v : row) values.push_back(v.is_number() ? v.get<double>() : std::nan(""));
    h.bw_gbps.push_back(std::move(values));
  }
  return h;
}

}  // namespace fb::reports
