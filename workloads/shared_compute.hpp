#pragma once
// Ranks that share their compute: more ranks on a node than the cores (host) or GPUs (cuda) they run on
// together. There they take turns, a rank's speed is the scheduler's, and comparing ranks (the slow-rank
// detector) says nothing about them.
#include <span>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"

namespace fb::workloads {

// One rank's compute units: the CPUs of its affinity mask (host) or its GPU's UUID (cuda).
struct RankUnits {
  std::string host;
  std::vector<std::string> units;
};

// The nodes whose ranks outnumber the units they hold together, in the order first seen, as
// "vm: 4 ranks share 2 cores". `unit` names one unit ("core", "GPU").
std::vector<std::string> nodes_sharing_units(std::span<const RankUnits> ranks, const std::string& unit);

// Every rank: its units gathered on rank 0, which returns nodes_sharing_units over them (others: empty).
std::vector<std::string> nodes_sharing_compute(const MpiContext& mpi, const Backend& backend);

}  // namespace fb::workloads
