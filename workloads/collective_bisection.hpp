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
  BisectionVerdict verdict;
};

// Collective over `comm` (the world). Every rank returns the same run.
BisectionRun run_bisection(const MpiContext& mpi, Backend& backend, Communicator& comm,
                           const BisectionOptions& o);

reports::Result bisection_result(const BisectionRun& run, const BisectionOptions& o);

}  // namespace fb::workloads
