#include "workloads/mpi_transport_record.hpp"

#include <array>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fb::workloads {

MpiComponents parse_loaded_mpi_components(std::string_view proc_maps) {
  MpiComponents c;
  std::istringstream in{std::string(proc_maps)};
  std::string line;
  while (std::getline(in, line)) {
    // The path is the last field; the same object is mapped several times (text, data, ...).
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    std::string_view file = std::string_view(line).substr(slash + 1);
    if (!file.starts_with("mca_") || !file.ends_with(".so")) continue;
    file = file.substr(4, file.size() - 7);  // "<framework>_<component>"
    const auto sep = file.find('_');
    if (sep == std::string_view::npos || sep + 1 == file.size()) continue;
    const auto framework = file.substr(0, sep);
    std::string component(file.substr(sep + 1));
    if (framework == "pml")
      c.pml.insert(std::move(component));
    else if (framework == "mtl")
      c.mtl.insert(std::move(component));
    else if (framework == "btl")
      c.btl.insert(std::move(component));
  }
  return c;
}

nlohmann::json MpiComponents::to_json() const {
  return {{"pml", pml}, {"mtl", mtl}, {"btl", btl}};
}

std::string MpiComponents::summary() const {
  std::string out;
  for (const auto& [name, set] : {std::pair{"pml", &pml}, std::pair{"mtl", &mtl}, std::pair{"btl", &btl}}) {
    if (set->empty()) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : "; ", name, fmt::join(*set, ","));
  }
  return out.empty() ? "no Open MPI component objects loaded" : out;
}

std::set<std::string> mpi_transport_kinds(const MpiComponents& c, bool same_host_peers,
                                          bool other_host_peers) {
  std::set<std::string> kinds;
  if (!same_host_peers && !other_host_peers) return kinds;
  const bool ob1 = c.pml.empty() || c.pml.count("ob1");  // empty: built in, or not Open MPI; read the BTLs
  if (!ob1) {
    kinds.insert("net");
    return kinds;
  }
  // Network BTLs, most exclusive first (openib 1024, uct and ofi above tcp's 100 in Open MPI 4.x).
  constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kNetwork{
      {{"openib", "ib"}, {"uct", "net"}, {"ofi", "net"}, {"usnic", "net"}, {"tcp", "socket"}}};
  std::string network;
  for (const auto& [btl, kind] : kNetwork)
    if (c.btl.count(std::string(btl))) {
      network = kind;
      break;
    }
  const bool shm = c.btl.count("vader") || c.btl.count("sm") || c.btl.count("smcuda");
  if (same_host_peers) {
    if (shm)
      kinds.insert("shm");
    else if (!network.empty())
      kinds.insert(network);
  }
  if (other_host_peers && !network.empty()) kinds.insert(network);
  return kinds;
}

}  // namespace fb::workloads
