#include "workloads/train/parallel_groups.hpp"

namespace fb::workloads::train {

ParallelGroups make_parallel_groups(MpiContext& mpi, Backend& backend, const ParallelConfig& c,
                                    const RankCoords& r, bool moe, std::int64_t kv_copies) {
  ParallelGroups g;
  g.world = make_communicator(mpi, backend);
  g.tp = g.world->split(static_cast<int>(r.p * c.dp + r.d), static_cast<int>(r.t));
  g.dp = g.world->split(static_cast<int>(r.p * c.tp + r.t), static_cast<int>(r.d));
  // TP ranks t with the same t / kv_copies hold the same kv head (workloads/train/tp_placement.hpp).
  if (kv_copies > 1) g.kv_copies = g.tp->split(static_cast<int>(r.t / kv_copies), static_cast<int>(r.t));
  if (moe) {
    const std::int64_t groups = c.dp * c.tp / c.ep;
    g.ep = g.world->split(static_cast<int>(r.p * groups + r.ep_group), static_cast<int>(r.ep_rank));
    g.edp = g.world->split(static_cast<int>(r.p * c.ep + r.ep_rank), static_cast<int>(r.ep_group));
  }
  // Pipeline: one two-rank communicator per pair of neighbouring stages with the same (d, t), rank 0 the
  // earlier stage. Boundary b joins stages b and b+1; a rank is in at most one boundary of each parity, so
  // two splits build them all.
  if (c.pp > 1) {
    const std::int64_t lanes = c.dp * c.tp, lane = r.d * c.tp + r.t;
    for (std::int64_t parity = 0; parity < 2; ++parity) {
      std::int64_t b = -1;
      if (r.p % 2 == parity && r.p + 1 < c.pp)
        b = r.p;  // lower side: the next stage
      else if (r.p >= 1 && (r.p - 1) % 2 == parity)
        b = r.p - 1;  // upper side: the previous stage
      auto pair = g.world->split(b < 0 ? -1 : static_cast<int>(b * lanes + lane), static_cast<int>(r.p));
      if (b == r.p)
        g.next = std::move(pair);
      else if (b >= 0)
        g.prev = std::move(pair);
    }
  }
  return g;
}

}  // namespace fb::workloads::train
