#pragma once
// The extras of the "locate" Results (docs/locate.md), written by workloads/p2p_matrix.cpp,
// workloads/collective_bisection.cpp and tools/locate_command.cpp, read by reports/locate_console.cpp and
// the HTML heatmaps:
//   p2p        extra.matrix (labels, bytes, bandwidth and latency [from][to]), extra.endpoints and, at the
//              largest size, extra.verdict
//   bisection  extra.rounds (the all-reduce groups of each round) and extra.slow_nodes
//   transport  extra.record (Open MPI's or NCCL's transport record) and extra.summary
//   hang       extra.diagnosis (what the hang watchdog found)
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

struct LocateEndpoint {
  int rank = 0;  // world rank that measures for the endpoint
  std::string host;
  int local_rank = 0;
  bool operator==(const LocateEndpoint&) const = default;
};

struct P2pMatrixExtra {
  std::vector<std::string> labels;  // per endpoint, "host (rank 2, GPU 0)"
  std::uint64_t bytes = 0;
  std::vector<std::vector<double>> bw_gbps, latency_us;  // [from][to]; non-finite (the diagonal) as null
  bool operator==(const P2pMatrixExtra&) const = default;
};

struct P2pFlagExtra {
  LocateEndpoint from, to;
  double bw_gbps = 0;
  std::string reason;
  bool operator==(const P2pFlagExtra&) const = default;
};

struct P2pVerdictExtra {
  double median_gbps = 0;     // of all directions
  double reference_gbps = 0;  // what directions are judged against (the median endpoint's best direction)
  std::vector<LocateEndpoint> slow_endpoints;
  std::vector<std::pair<LocateEndpoint, LocateEndpoint>> slow_links;  // (a, b)
  std::vector<P2pFlagExtra> flags;
  bool operator==(const P2pVerdictExtra&) const = default;
};

struct P2pExtra {
  P2pMatrixExtra matrix;
  std::vector<LocateEndpoint> endpoints;
  std::optional<P2pVerdictExtra> verdict;  // the largest size's result only
  bool operator==(const P2pExtra&) const = default;
};

struct BisectionGroupExtra {
  std::vector<std::string> hosts;
  int ranks = 0;
  double busbw_gbps = 0;  // NaN (null) for a group of one rank
  bool below_floor = false;
  bool operator==(const BisectionGroupExtra&) const = default;
};

struct BisectionExtra {
  std::vector<std::vector<BisectionGroupExtra>> rounds;
  // One rank per node: each named node measured with a node that was not named, {suspect, partner}
  // (workloads/collective_bisection.hpp); absent from the report when none was needed.
  std::vector<BisectionGroupExtra> cross_pairs;
  std::vector<std::string> slow_nodes;  // host names
  bool operator==(const BisectionExtra&) const = default;
};

struct TransportExtra {
  nlohmann::json record = nlohmann::json::object();  // the transport record as measured, also the summary's
  std::string summary;                               // in words
  bool operator==(const TransportExtra&) const = default;
};

struct HangExtra {
  std::vector<std::string> diagnosis;  // one line per stuck rank
  bool operator==(const HangExtra&) const = default;
};

// The verdict's JSON (extra.verdict, and the report summary's locate.p2p).
nlohmann::json p2p_verdict_json(const P2pVerdictExtra& verdict);

// Readers throw an input Error naming the result and the missing or mistyped key, but for the transport
// record and summary, which may be absent (empty then).
void write_p2p_extra(Result& r, const P2pExtra& extra);
P2pExtra read_p2p_extra(const Result& r);
void write_bisection_extra(Result& r, const BisectionExtra& extra);
BisectionExtra read_bisection_extra(const Result& r);
void write_transport_extra(Result& r, const TransportExtra& extra);
TransportExtra read_transport_extra(const Result& r);
void write_hang_extra(Result& r, const HangExtra& extra);
HangExtra read_hang_extra(const Result& r);

// True when the result carries the p2p verdict (only the largest size's result does).
bool has_p2p_verdict(const Result& r);

// A matrix as the HTML heatmap reads any result: nullopt without an extra.matrix object holding labels and
// bw_gbps; a label that is not a string is its JSON text, a cell that is not a number NaN.
struct HeatmapMatrix {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> bw_gbps;
  bool operator==(const HeatmapMatrix&) const = default;
};
std::optional<HeatmapMatrix> find_p2p_matrix(const Result& r);

}  // namespace fb::reports
