#pragma once
// Which transports Open MPI selected: the host side of locate's transport record (issue 17). Open MPI loads
// its components as shared objects (mca_<framework>_<component>.so) and, once MPI_Init has chosen, closes and
// unloads those it did not select; the mca_pml_*, mca_mtl_* and mca_btl_* objects still mapped in
// /proc/self/maps are its selection (components built into libmpi cannot be seen this way). Pure: the caller
// reads the maps.
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fb::workloads {

struct MpiComponents {
  std::set<std::string> pml, mtl, btl;

  bool empty() const { return pml.empty() && mtl.empty() && btl.empty(); }
  nlohmann::json to_json() const;
  // One line, "pml ob1; btl self,tcp,vader" (frameworks with nothing loaded left out).
  std::string summary() const;
};

MpiComponents parse_loaded_mpi_components(std::string_view proc_maps);

// The transport kinds (transport_record.hpp) a rank's traffic takes. With the ob1 PML, Open MPI's BML (r2)
// gives each peer its most exclusive reachable BTL: vader/sm/smcuda ("shm") for a peer on the same host when
// loaded, otherwise, as for peers on other hosts, the best network BTL loaded (openib "ib" over uct and ofi
// "net" over tcp "socket"). Other PMLs (ucx, cm with an MTL) choose inside their own library: "net".
std::set<std::string> mpi_transport_kinds(const MpiComponents& c, bool same_host_peers,
                                          bool other_host_peers);

}  // namespace fb::workloads
