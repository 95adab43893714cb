#pragma once
// Everything that differs between collectives, in one table (nccl-tests' testColl; rows in
// workloads/collective_table.cpp): the name, how the size S maps to per-rank element counts, the
// bus-bandwidth factor, the in-place layout, the engine call and the reference check. The functions
// declared here are pure.
//
// Semantics follow NVIDIA nccl-tests (src/*.cu getCollByteCount/getBw and doc/PERFORMANCE.md):
//   S (bytes, the "size" column): allreduce, broadcast, reduce, sendrecv: count·elem;
//   allgather, reducescatter: the whole gathered/scattered array, size·count·elem;
//   alltoall: a rank's whole send buffer, size·count·elem (count per peer);
//   alltoallv: the busiest rank's bytes (sent or received).
//   algbw = S / t (GB/s, 1e9 bytes); busbw = algbw · factor(n).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace fb::workloads {

enum class CollectiveOp {
  allreduce,
  allgather,
  reducescatter,
  alltoall,
  alltoallv,
  broadcast,
  reduce,
  sendrecv
};

// How a size is split among ranks.
enum class SizeSplit {
  whole,     // every rank holds count = S / elem elements (allreduce, broadcast, reduce, sendrecv)
  per_rank,  // S is size·count: count = floor(S / elem / size), rounded down to 16 bytes
};

// Where an in-place run puts the send (or receive) buffer inside the one buffer (nccl-tests' offsets).
enum class InPlace {
  same,                // send = recv
  send_is_rank_block,  // allgather: this rank's block of the gathered array
  recv_is_rank_block,  // reducescatter: this rank's block of the scattered array
};

struct CollectiveCall;  // workloads/collective_table.hpp
struct CheckAccess;

struct CollectiveInfo {
  CollectiveOp op;
  std::string_view name;  // command line and result names (nccl-tests spelling without "_")
  SizeSplit split;
  bool reduces;  // takes a reduce op (--redop)
  bool rooted;   // takes a root (--root)
  // busbw / algbw as num·(n−1)/n + constant: allreduce 2(n−1)/n, allgather... (n−1)/n, broadcast... 1.
  int factor_num;       // 2, 1 or 0 (× (n−1)/n)
  int factor_constant;  // 1 for the rooted and point-to-point ops, else 0
  bool send_per_peer;   // per_rank split: the send buffer holds count elements per rank (else count)
  bool recv_per_peer;   // likewise the receive buffer
  InPlace inplace;
  bool uneven;  // counts per peer come from a traffic matrix (alltoallv), not from S
  void (*issue)(const CollectiveCall& call);         // the engine call
  void (*check_inputs)(const CheckAccess& access);   // --check: this rank's inputs (access.at = write)
  void (*check_outputs)(const CheckAccess& access);  // --check: this rank's expected outputs (at = compare)
};

std::span<const CollectiveInfo> all_collectives();
const CollectiveInfo& collective_info(CollectiveOp op);
inline std::string_view to_string(CollectiveOp op) {
  return collective_info(op).name;
}
// Accepts the names above and nccl-tests' spellings (all_reduce, all_gather, reduce_scatter, alltoall,
// send_recv). Throws a usage Error listing the valid names.
CollectiveOp parse_collective(std::string_view text);

// busbw / algbw for `ranks` ranks (nccl-tests doc/PERFORMANCE.md). 1 rank: 0 for the (n−1)/n family.
double bus_factor(CollectiveOp op, int ranks);

// The element counts of one size: `count` is the per-rank "count" column (allreduce: the vector; allgather:
// each rank's block; reducescatter: each rank's result block; alltoall: per peer). `bytes` is S after
// rounding, 0 when S is too small to give every rank one aligned chunk.
struct CollectiveCounts {
  std::size_t count = 0;
  std::size_t send_count = 0;  // elements in a rank's send buffer
  std::size_t recv_count = 0;  // elements in a rank's receive buffer
  std::uint64_t bytes = 0;     // S after rounding
};
// For alltoallv the uniform (alltoall) layout is returned; the actual counts come from a traffic matrix.
CollectiveCounts collective_counts(CollectiveOp op, std::uint64_t size_bytes, DType type, int ranks);

// Elements per rank rounded down to whole, 16-byte-aligned chunks, as nccl-tests `(count/nranks) &
// -(16/elem)`.
std::size_t aligned_per_rank_count(std::uint64_t size_bytes, std::size_t elem_bytes, int ranks);

// Bandwidths in GB/s (1e9 bytes per second).
double algbw_gbps(std::uint64_t bytes, double seconds);

// The sizes of a sweep: MIN, then ×factor (or +step when step > 0) while ≤ MAX. Usage Errors name the
// option: -b > -e, -f < 2 without -i, zero sizes.
std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                       std::uint64_t step);

}  // namespace fb::workloads
