#pragma once
// The per-collective rows' engine call and reference check (the table itself is in collective_table.cpp;
// its columns in collective_bandwidth.hpp). What a row needs to issue its collective or to write and check
// its --check pattern.
#include <cstddef>
#include <functional>
#include <vector>

#include "core/communicator.hpp"
#include "workloads/collective_bandwidth.hpp"
#include "workloads/collective_check.hpp"

namespace fb::workloads {

// alltoallv's per-peer element counts and displacements for one rank.
struct AlltoallvLayout {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
};

struct CollectiveCall {
  Communicator& comm;
  const void* send;
  void* recv;
  std::size_t count;  // the row's "count" (collective_counts)
  DType type;
  ReduceOp redop;
  int root;
  const AlltoallvLayout* v;  // alltoallv only
};

// One rank's view of the --check pattern: `at(index, value)` writes an input element, or compares an
// output element, at `index` of the rank's buffer region.
struct CheckAccess {
  int rank, ranks, root;
  std::size_t count;
  bool inplace;
  const CheckPattern& pattern;
  const AlltoallvLayout* v;
  std::function<void(std::size_t index, double value)> at;
};

// Element offset of the send and receive regions inside the one buffer of an in-place run.
std::size_t inplace_send_offset(const CollectiveInfo& info, int rank, std::size_t count);
std::size_t inplace_recv_offset(const CollectiveInfo& info, int rank, std::size_t count);

}  // namespace fb::workloads
