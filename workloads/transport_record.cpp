#include "workloads/transport_record.hpp"

#include <algorithm>
#include <array>
#include <sstream>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

constexpr std::array<std::string_view, 7> kKinds{"p2p", "shm", "ib", "socket", "net", "collnet", "nvls"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "8[0]" -> "8" (the NCCL rank; the bracket holds the device or bus id).
std::string rank_of(std::string_view token) {
  token = trim(token);
  return std::string(token.substr(0, token.find('[')));
}

}  // namespace

std::string transport_kind(std::string_view via) {
  if (via.starts_with("P2P")) return "p2p";
  if (via.starts_with("SHM")) return "shm";
  if (via.starts_with("NET/IB")) return "ib";  // NET/IB, NET/IBext, NET/IBext_v8
  if (via.starts_with("NET/Socket")) return "socket";
  if (via.starts_with("NET/")) return "net";
  if (via.starts_with("CollNet") || via.starts_with("COLLNET")) return "collnet";
  if (via.starts_with("NVLS")) return "nvls";
  return "net";
}

TransportRecord parse_nccl_init_log(std::string_view text) {
  TransportRecord r;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const auto info = line.find("NCCL INFO ");
    if (info == std::string::npos) continue;
    ++r.lines;
    const std::string_view msg = trim(std::string_view(line).substr(info + 10));
    if (msg.starts_with("Using network ")) {
      r.network = std::string(trim(msg.substr(14)));
      continue;
    }
    if (const auto nvls = msg.find(" nvls channels"); nvls != std::string_view::npos) {
      const auto comma = msg.rfind(", ", nvls);
      const auto num = msg.substr(comma == std::string_view::npos ? 0 : comma + 2,
                                  nvls - (comma == std::string_view::npos ? 0 : comma + 2));
      try {
        r.nvls_channels = std::max(r.nvls_channels, std::stoi(std::string(num)));
      } catch (...) {
      }
      if (r.nvls_channels > 0) r.kinds.insert("nvls");
      continue;
    }
    if (!msg.starts_with("Channel ")) continue;
    const auto via = msg.find(" via ");
    const auto arrow = msg.find(" -> ");
    const auto colon = msg.find(" : ");
    if (via == std::string_view::npos || arrow == std::string_view::npos || colon == std::string_view::npos ||
        !(colon < arrow && arrow < via))
      continue;
    const std::string from = rank_of(msg.substr(colon + 3, arrow - colon - 3));
    std::string_view rest = msg.substr(arrow + 4, via - arrow - 4);  // "15[7]" or "6[6] [send]"
    const std::string to = rank_of(rest.substr(0, rest.find(' ')));
    const std::string how(trim(msg.substr(via + 5)));
    r.kinds.insert(transport_kind(how));
    r.peers[from + "->" + to].insert(how);
  }
  return r;
}

void TransportRecord::merge(const TransportRecord& o) {
  if (network.empty()) network = o.network;
  kinds.insert(o.kinds.begin(), o.kinds.end());
  for (const auto& [k, v] : o.peers) peers[k].insert(v.begin(), v.end());
  nvls_channels = std::max(nvls_channels, o.nvls_channels);
  lines += o.lines;
}

nlohmann::json TransportRecord::to_json() const {
  nlohmann::json p = nlohmann::json::object();
  for (const auto& [k, v] : peers) p[k] = v;
  return {{"network", network},
          {"kinds", kinds},
          {"nvls_channels", nvls_channels},
          {"peers", p},
          {"lines", lines}};
}

std::set<std::string> parse_transport_kinds(std::string_view text) {
  std::set<std::string> out;
  std::istringstream in{std::string(text)};
  std::string k;
  while (std::getline(in, k, ',')) {
    if (std::find(kKinds.begin(), kKinds.end(), k) == kKinds.end())
      throw usage_error("invalid --expect-transport '" + std::string(text) + "': unknown kind '" + k +
                        "' (expected p2p, shm, ib, socket, net, collnet, nvls)");
    out.insert(k);
  }
  if (out.empty()) throw usage_error("invalid --expect-transport '': expected KIND[,KIND...]");
  return out;
}

std::vector<std::string> unexpected_transports(const TransportRecord& record,
                                               const std::set<std::string>& expected) {
  std::vector<std::string> out;
  for (const auto& k : record.kinds)
    if (!expected.count(k)) out.push_back(k);
  return out;
}

}  // namespace fb::workloads
