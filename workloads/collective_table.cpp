// One row per collective, as nccl-tests keeps one testColl per collective (src/all_reduce.cu, ...): the
// name, the size split and bus factor (doc/PERFORMANCE.md), the in-place layout, the engine call and the
// --check pattern. Adding a collective is adding a row; nothing else switches on the op.
#include <array>
#include <string>

#include "core/error.hpp"
#include "workloads/collective_table.hpp"

namespace fb::workloads {
namespace {

using Call = CollectiveCall;
using Access = CheckAccess;
constexpr int kPrev = -1, kNext = 1;

int peer(const Access& a, int step) {
  return (a.rank + step + a.ranks) % a.ranks;
}

// Inputs and outputs shared by several rows.
void reduce_inputs(const Access& a, std::size_t elements) {
  for (std::size_t i = 0; i < elements; ++i) a.at(i, a.pattern.reduce_input(a.rank, i));
}
void reduce_outputs(const Access& a) {
  for (std::size_t i = 0; i < a.count; ++i) a.at(i, a.pattern.reduce_expected(i));
}
void own_block(const Access& a) {
  for (std::size_t i = 0; i < a.count; ++i) a.at(i, a.pattern.move_value(a.rank, 0, i));
}
void none(const Access&) {}

// In place, what alltoallv sends to rank d is read from the receive layout (symmetric counts).
void alltoallv_inputs(const Access& a) {
  const auto& counts = a.inplace ? a.v->recv_counts : a.v->send_counts;
  const auto& displs = a.inplace ? a.v->recv_displs : a.v->send_displs;
  for (std::size_t d = 0; d < counts.size(); ++d)
    for (std::size_t k = 0; k < counts[d]; ++k)
      a.at(displs[d] + k, a.pattern.move_value(a.rank, static_cast<int>(d), k));
}
void alltoallv_outputs(const Access& a) {
  for (std::size_t s = 0; s < a.v->recv_counts.size(); ++s)
    for (std::size_t k = 0; k < a.v->recv_counts[s]; ++k)
      a.at(a.v->recv_displs[s] + k, a.pattern.move_value(static_cast<int>(s), a.rank, k));
}

// name, split, reduces, rooted, factor_num·(n−1)/n + factor_constant, send/recv per peer, in place, uneven,
// engine call, check inputs, check outputs
const std::array<CollectiveInfo, 8> kCollectives{{
    {CollectiveOp::allreduce, "allreduce", SizeSplit::whole, true, false, 2, 0, false, false, InPlace::same,
     false, [](const Call& c) { c.comm.allreduce(c.send, c.recv, c.count, c.type, c.redop); },
     [](const Access& a) { reduce_inputs(a, a.count); }, reduce_outputs},
    {CollectiveOp::allgather, "allgather", SizeSplit::per_rank, false, false, 1, 0, false, true,
     InPlace::send_is_rank_block, false,
     [](const Call& c) { c.comm.allgather(c.send, c.recv, c.count, c.type); }, own_block,
     [](const Access& a) {
       for (int s = 0; s < a.ranks; ++s)
         for (std::size_t k = 0; k < a.count; ++k)
           a.at(static_cast<std::size_t>(s) * a.count + k, a.pattern.move_value(s, 0, k));
     }},
    {CollectiveOp::reducescatter, "reducescatter", SizeSplit::per_rank, true, false, 1, 0, true, false,
     InPlace::recv_is_rank_block, false,
     [](const Call& c) { c.comm.reduce_scatter(c.send, c.recv, c.count, c.type, c.redop); },
     [](const Access& a) { reduce_inputs(a, a.count * static_cast<std::size_t>(a.ranks)); },
     [](const Access& a) {
       for (std::size_t i = 0; i < a.count; ++i)
         a.at(i, a.pattern.reduce_expected(static_cast<std::size_t>(a.rank) * a.count + i));
     }},
    {CollectiveOp::alltoall, "alltoall", SizeSplit::per_rank, false, false, 1, 0, true, true, InPlace::same,
     false, [](const Call& c) { c.comm.alltoall(c.send, c.recv, c.count, c.type); },
     [](const Access& a) {
       for (int d = 0; d < a.ranks; ++d)
         for (std::size_t k = 0; k < a.count; ++k)
           a.at(static_cast<std::size_t>(d) * a.count + k, a.pattern.move_value(a.rank, d, k));
     },
     [](const Access& a) {
       for (int s = 0; s < a.ranks; ++s)
         for (std::size_t k = 0; k < a.count; ++k)
           a.at(static_cast<std::size_t>(s) * a.count + k, a.pattern.move_value(s, a.rank, k));
     }},
    {CollectiveOp::alltoallv, "alltoallv", SizeSplit::per_rank, false, false, 1, 0, true, true, InPlace::same,
     true,
     [](const Call& c) {
       c.comm.alltoallv(c.send, c.v->send_counts, c.v->send_displs, c.recv, c.v->recv_counts,
                        c.v->recv_displs, c.type);
     },
     alltoallv_inputs, alltoallv_outputs},
    {CollectiveOp::broadcast, "broadcast", SizeSplit::whole, false, true, 0, 1, false, false, InPlace::same,
     false, [](const Call& c) { c.comm.broadcast(c.send, c.recv, c.count, c.type, c.root); },
     [](const Access& a) { a.rank == a.root ? own_block(a) : none(a); },
     [](const Access& a) {
       for (std::size_t i = 0; i < a.count; ++i) a.at(i, a.pattern.move_value(a.root, 0, i));
     }},
    {CollectiveOp::reduce, "reduce", SizeSplit::whole, true, true, 0, 1, false, false, InPlace::same, false,
     [](const Call& c) { c.comm.reduce(c.send, c.recv, c.count, c.type, c.redop, c.root); },
     [](const Access& a) { reduce_inputs(a, a.count); },
     [](const Access& a) { a.rank == a.root ? reduce_outputs(a) : none(a); }},
    {CollectiveOp::sendrecv, "sendrecv", SizeSplit::whole, false, false, 0, 1, false, false, InPlace::same,
     false,
     [](const Call& c) {
       const int n = c.comm.size(), r = c.comm.rank();
       c.comm.sendrecv(c.send, (r + kNext + n) % n, c.recv, (r + kPrev + n) % n, c.count, c.type);
     },
     own_block,
     [](const Access& a) {
       for (std::size_t i = 0; i < a.count; ++i) a.at(i, a.pattern.move_value(peer(a, kPrev), 0, i));
     }},
}};

struct Alias {
  std::string_view alias;
  CollectiveOp op;
};
constexpr std::array<Alias, 6> kAliases{{
    {"all_reduce", CollectiveOp::allreduce},
    {"all_gather", CollectiveOp::allgather},
    {"reduce_scatter", CollectiveOp::reducescatter},
    {"all_to_all", CollectiveOp::alltoall},
    {"all_to_allv", CollectiveOp::alltoallv},
    {"send_recv", CollectiveOp::sendrecv},
}};

}  // namespace

std::span<const CollectiveInfo> all_collectives() {
  return kCollectives;
}

const CollectiveInfo& collective_info(CollectiveOp op) {
  for (const auto& info : kCollectives)
    if (info.op == op) return info;
  throw runtime_error("unknown collective enumerator");
}

CollectiveOp parse_collective(std::string_view text) {
  for (const auto& info : kCollectives)
    if (info.name == text) return info.op;
  for (const auto& alias : kAliases)
    if (alias.alias == text) return alias.op;
  std::string names;
  for (const auto& info : kCollectives) names += std::string(info.name) + ", ";
  throw usage_error("invalid --op '" + std::string(text) + "' (expected one of " + names + "all)");
}

std::size_t inplace_send_offset(const CollectiveInfo& info, int rank, std::size_t count) {
  return info.inplace == InPlace::send_is_rank_block ? static_cast<std::size_t>(rank) * count : 0;
}

std::size_t inplace_recv_offset(const CollectiveInfo& info, int rank, std::size_t count) {
  return info.inplace == InPlace::recv_is_rank_block ? static_cast<std::size_t>(rank) * count : 0;
}

}  // namespace fb::workloads
