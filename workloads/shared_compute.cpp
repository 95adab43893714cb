#include "workloads/shared_compute.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/host_telemetry.hpp"
#include "core/rank_collectives.hpp"

namespace fb::workloads {

std::vector<std::string> nodes_sharing_units(std::span<const RankUnits> ranks, const std::string& unit) {
  std::vector<std::string> hosts;
  for (const auto& r : ranks)
    if (std::find(hosts.begin(), hosts.end(), r.host) == hosts.end()) hosts.push_back(r.host);
  std::vector<std::string> shared;
  for (const auto& host : hosts) {
    // The union, not each rank's count: two ranks bound to the same core share it although each holds one.
    std::set<std::string> held;
    std::size_t count = 0;
    for (const auto& r : ranks)
      if (r.host == host) {
        ++count;
        held.insert(r.units.begin(), r.units.end());
      }
    if (count > held.size())
      shared.push_back(fmt::format("{}: {} ranks share {} {}{}", host, count, held.size(), unit,
                                   held.size() == 1 ? "" : "s"));
  }
  return shared;
}

std::vector<std::string> nodes_sharing_compute(const MpiContext& mpi, const Backend& backend) {
  const DeviceInfo device = backend.device();
  const bool gpu = device.kind == "gpu";
  std::string mine;
  if (gpu) {
    mine = device.uuid.empty() ? fmt::format("{}", device.index) : device.uuid;
  } else {
    for (const int cpu : host::affinity_cpus()) mine += fmt::format("{}{}", mine.empty() ? "" : ",", cpu);
  }
  const auto all = gather_to_root(mpi, mine);
  if (!mpi.is_root()) return {};
  std::vector<RankUnits> ranks;
  for (std::size_t r = 0; r < all.size(); ++r) {
    RankUnits u{mpi.hostnames()[r], {}};
    std::size_t from = 0;
    while (from < all[r].size()) {
      const auto comma = std::min(all[r].find(',', from), all[r].size());
      u.units.push_back(all[r].substr(from, comma - from));
      from = comma + 1;
    }
    ranks.push_back(std::move(u));
  }
  return nodes_sharing_units(ranks, gpu ? "GPU" : "core");
}

}  // namespace fb::workloads
