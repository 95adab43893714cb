#include "workloads/collective_bandwidth.hpp"

#include <array>
#include <string>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

// name, split, reduces, rooted, factor_num·(n−1)/n + factor_constant
constexpr std::array<CollectiveInfo, 8> kCollectives{{
    {CollectiveOp::allreduce, "allreduce", SizeSplit::whole, true, false, 2, 0},
    {CollectiveOp::allgather, "allgather", SizeSplit::per_rank, false, false, 1, 0},
    {CollectiveOp::reducescatter, "reducescatter", SizeSplit::per_rank, true, false, 1, 0},
    {CollectiveOp::alltoall, "alltoall", SizeSplit::per_rank, false, false, 1, 0},
    {CollectiveOp::alltoallv, "alltoallv", SizeSplit::per_rank, false, false, 1, 0},
    {CollectiveOp::broadcast, "broadcast", SizeSplit::whole, false, true, 0, 1},
    {CollectiveOp::reduce, "reduce", SizeSplit::whole, true, true, 0, 1},
    {CollectiveOp::sendrecv, "sendrecv", SizeSplit::whole, false, false, 0, 1},
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

double bus_factor(CollectiveOp op, int ranks) {
  const auto& info = collective_info(op);
  const double n = ranks;
  return info.factor_num * (n - 1.0) / n + info.factor_constant;
}

std::size_t aligned_per_rank_count(std::uint64_t size_bytes, std::size_t elem_bytes, int ranks) {
  const std::uint64_t count = size_bytes / elem_bytes / static_cast<std::uint64_t>(ranks);
  // nccl-tests: (count/nranks) & -(16/eltSize); elements wider than 16 bytes need no alignment.
  const std::uint64_t align = elem_bytes < 16 ? 16 / elem_bytes : 1;
  return static_cast<std::size_t>(count / align * align);
}

CollectiveCounts collective_counts(CollectiveOp op, std::uint64_t size_bytes, DType type, int ranks) {
  const std::size_t elem = dtype_bytes(type);
  const auto n = static_cast<std::size_t>(ranks);
  CollectiveCounts c;
  switch (op) {
    case CollectiveOp::allreduce:
    case CollectiveOp::broadcast:
    case CollectiveOp::reduce:
    case CollectiveOp::sendrecv:
      c.count = c.send_count = c.recv_count = static_cast<std::size_t>(size_bytes / elem);
      c.bytes = c.count * elem;
      return c;
    case CollectiveOp::allgather:
      c.count = c.send_count = aligned_per_rank_count(size_bytes, elem, ranks);
      c.recv_count = c.count * n;
      break;
    case CollectiveOp::reducescatter:
      c.count = c.recv_count = aligned_per_rank_count(size_bytes, elem, ranks);
      c.send_count = c.count * n;
      break;
    case CollectiveOp::alltoall:
    case CollectiveOp::alltoallv:
      c.count = aligned_per_rank_count(size_bytes, elem, ranks);
      c.send_count = c.recv_count = c.count * n;
      break;
  }
  c.bytes = static_cast<std::uint64_t>(c.count) * n * elem;
  return c;
}

double algbw_gbps(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / 1e9 / seconds : 0.0;
}

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                       std::uint64_t step) {
  if (min_bytes == 0) throw usage_error("invalid -b/--minbytes 0: must be at least 1 byte");
  if (min_bytes > max_bytes)
    throw usage_error("invalid size range: -b/--minbytes " + std::to_string(min_bytes) +
                      " is larger than -e/--maxbytes " + std::to_string(max_bytes));
  if (step == 0 && factor < 2)
    throw usage_error("invalid -f/--stepfactor " + std::to_string(factor) +
                      ": must be at least 2 (or use -i STEP)");
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes;) {
    sizes.push_back(s);
    const std::uint64_t next = step > 0 ? s + step : s * factor;
    if (next <= s) break;  // overflow
    s = next;
  }
  return sizes;
}

}  // namespace fb::workloads
