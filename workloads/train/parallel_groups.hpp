#pragma once
// The communicators of a rank's place in a tensor/data/expert/pipeline-parallel layout (docs/train.md).
#include <memory>

#include "core/communicator.hpp"
#include "core/mpi_context.hpp"
#include "workloads/parallel_layout.hpp"

namespace fb::workloads::train {

struct ParallelGroups {
  std::unique_ptr<Communicator> world;
  std::unique_ptr<Communicator> tp, dp;   // same (p, d) / same (p, t)
  std::unique_ptr<Communicator> ep, edp;  // MoE: expert-parallel group, replicas of the same experts
  // Grouped-query attention with fewer kv heads than TP ranks: the TP ranks holding the same kv head.
  std::unique_ptr<Communicator> kv_copies;
  std::unique_ptr<Communicator> prev,
      next;  // pipeline: the pair with the previous / next stage (null at ends)
};

// Splits the backend's world communicator by `coords`. Collective over the world; `moe` adds ep and edp,
// `kv_copies` > 1 (TP ranks per kv head) the kv_copies group.
ParallelGroups make_parallel_groups(MpiContext& mpi, Backend& backend, const ParallelConfig& c,
                                    const RankCoords& r, bool moe, std::int64_t kv_copies = 1);

}  // namespace fb::workloads::train
