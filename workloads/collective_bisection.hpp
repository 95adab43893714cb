#pragma once
// Collective bisection for `factorybench locate` (issue 17, docs/locate.md): the all-reduce over the whole
// job, then over node-aligned halves, quarters, ... down to single nodes (about log2 N rounds), each group
// on its own communicator (Communicator::split), all groups of a round at once. A group is below floor when
// its bus bandwidth is under the absolute floor (one for single nodes, one for several), or under the
// median of its peers by more than the outlier threshold: a single node's peers are all nodes alone, a
// multi-node group's the multi-node groups of its round (at least two of them). The nodes named are those of
// the smallest groups below floor whose subgroups all pass: the nodes whose presence drags their group down.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "core/mpi_context.hpp"
#include "reports/report.hpp"

namespace fb::workloads {

// rounds[r] = the groups of round r, each a contiguous range of node indices [first, last). Round 0 is
// the whole job; each later round halves every group of more than one node (the first half gets the
// extra node). Stops when every group is one node. Pure.
struct NodeGroup {
  int first = 0, last = 0;
  int size() const { return last - first; }
  bool operator==(const NodeGroup&) const = default;
};
std::vector<std::vector<NodeGroup>> plan_bisection(int nodes);

struct GroupMeasurement {
  NodeGroup group;
  int ranks = 0;
  double busbw_gbps = 0;  // NaN for a group of one rank (no all-reduce traffic)
  bool below_floor = false;
};

struct BisectionVerdict {
  std::vector<int> nodes;  // indices of the nodes named, ascending
};

// Marks each measurement below floor and names the nodes. `rounds` as planned, measured. Pure.
// Single-node groups are held to `node_floor_gbps`, groups of several nodes to `network_floor_gbps` (0 =
// no absolute floor).
BisectionVerdict judge_bisection(std::vector<std::vector<GroupMeasurement>>& rounds, double node_floor_gbps,
                                 double network_floor_gbps, double outlier_threshold);

// One rank per node: a node alone has no all-reduce of its own (n/a), so the bisection narrows a slow node
// only to the smallest multi-node group it drags down (with 4 nodes, a pair). The cross-check measures each
// such named node with a node that was not named; the named node whose cross pair is below floor stays
// named, one whose cross pair passes is cleared. When every cross pair of a run of adjacent named nodes
// passes, the run stays named: those nodes are slow only together (the link between them).
struct CrossPair {
  int suspect = 0, partner = 0;  // node indices
  double busbw_gbps = 0;         // NaN until measured
  int ranks = 0;                 // on both nodes
  bool below_floor = false;
  int batch = 0;  // pairs of one batch are disjoint and measured at once; batches one after another
  bool operator==(const CrossPair&) const = default;
};
// The pairs to measure: each named node whose single-node group was not measured (NaN), with a node that was
// not named, in node order. With fewer unnamed nodes than suspects the unnamed ones are paired again, in
// later batches (3 nodes, 2 named: {0, 2}, then {1, 2}), so every suspect is measured. Pure.
std::vector<CrossPair> plan_cross_pairs(const std::vector<std::vector<GroupMeasurement>>& rounds,
                                        const BisectionVerdict& verdict, int nodes);
// Marks each measured pair below floor (under `network_floor_gbps`, or under the median of the two-node
// groups that passed in `rounds` — of every multi-node group that passed when none has two nodes — by more
// than the outlier threshold) and returns the verdict with the cleared nodes removed. Pure.
BisectionVerdict judge_cross_pairs(std::vector<CrossPair>& pairs,
                                   const std::vector<std::vector<GroupMeasurement>>& rounds,
                                   const BisectionVerdict& verdict, double network_floor_gbps,
                                   double outlier_threshold);

struct BisectionOptions {
  std::uint64_t bytes = 4 << 20;
  int warmup = 1;
  int iterations = 5;
  double node_floor_gbps = 0;     // single-node groups (NVLink); 0 = relative test only
  double network_floor_gbps = 0;  // groups of several nodes (the fabric); 0 = relative test only
  double outlier_threshold = 0.5;
  int confirm_passes = 2;  // further passes over all rounds; each group keeps its best figure
};

struct BisectionRun {
  std::vector<std::string> hosts;  // node index -> host name
  std::vector<std::vector<GroupMeasurement>> rounds;
  std::vector<CrossPair> cross_pairs;  // empty unless a named node could not be measured alone
  BisectionVerdict verdict;
};

// Collective over `comm` (the world). Every rank returns the same run.
BisectionRun run_bisection(const MpiContext& mpi, Backend& backend, Communicator& comm,
                           const BisectionOptions& o);

reports::Result bisection_result(const BisectionRun& run, const BisectionOptions& o);

}  // namespace fb::workloads
