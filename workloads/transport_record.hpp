#pragma once
// Which transport NCCL actually used (issue 17): parsed from NCCL's own initialization log, written with
// NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET NCCL_DEBUG_FILE=<run dir>/... . The lines read:
//   "<host>:<pid>:<tid> [<dev>] NCCL INFO Channel 00/0 : 8[0] -> 15[7] via P2P/IPC/read"
//   "... NCCL INFO Channel 03/0 : 15[7] -> 6[6] [send] via NET/Socket/3"
//   "... NCCL INFO Using network IB"                 (or Socket, IBext, IBext_v8: the net plugin)
//   "... NCCL INFO 8 coll channels, 0 collnet channels, 0 nvls channels, 8 p2p channels, ..."
// (formats as printed by NCCL 2.x; examples in NVIDIA/nccl issues #952, #429, #1189 and nccl-tests #188,
// #228).
// `--expect-transport` turns a silent fallback (to sockets, say) into a failure. Pure.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::workloads {

// Transport kinds: "p2p" (NVLink or PCIe peer-to-peer, P2P/...), "shm" (SHM/...), "ib" (NET/IB and
// IBext plugins: InfiniBand and RoCE verbs), "socket" (NET/Socket), "net" (another net plugin),
// "collnet", "nvls" (NVLink SHARP channels > 0).
struct TransportRecord {
  std::string network;  // "IB", "Socket", "IBext_v8"; empty when no line said
  std::set<std::string> kinds;
  // "from->to" (NCCL ranks) -> the distinct "via" strings seen for that peer pair.
  std::map<std::string, std::set<std::string>> peers;
  int nvls_channels = 0;
  int lines = 0;  // NCCL INFO lines read

  void merge(const TransportRecord& other);
  nlohmann::json to_json() const;
};

// The kind of a "via" string ("P2P/IPC/read" -> "p2p", "NET/IB/0/GDRDMA" -> "ib").
std::string transport_kind(std::string_view via);
TransportRecord parse_nccl_init_log(std::string_view text);

// Kinds used but not expected ("socket" when --expect-transport p2p,ib). `expected` holds kinds; throws
// a usage Error for an unknown kind.
std::vector<std::string> unexpected_transports(const TransportRecord& record,
                                               const std::set<std::string>& expected);
std::set<std::string> parse_transport_kinds(std::string_view text);

}  // namespace fb::workloads
