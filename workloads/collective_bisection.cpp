#include "workloads/collective_bisection.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/progress_meter.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "reports/locate_extra.hpp"
#include "workloads/measurement_loop.hpp"

namespace fb::workloads {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median_of(const std::vector<double>& v) {
  return v.empty() ? kNaN : summarize(v).median;
}

}  // namespace

std::vector<std::vector<NodeGroup>> plan_bisection(int nodes) {
  std::vector<std::vector<NodeGroup>> rounds;
  if (nodes < 1) return rounds;
  rounds.push_back({{0, nodes}});
  while (std::any_of(rounds.back().begin(), rounds.back().end(),
                     [](const NodeGroup& g) { return g.size() > 1; })) {
    std::vector<NodeGroup> next;
    for (const auto& g : rounds.back()) {
      if (g.size() == 1) {
        next.push_back(g);
        continue;
      }
      const int mid = g.first + (g.size() + 1) / 2;
      next.push_back({g.first, mid});
      next.push_back({mid, g.last});
    }
    rounds.push_back(std::move(next));
  }
  return rounds;
}

BisectionVerdict judge_bisection(std::vector<std::vector<GroupMeasurement>>& rounds, double node_floor_gbps,
                                 double network_floor_gbps, double outlier_threshold) {
  // Like is compared with like: a single node (NVLink) is several times faster than a group that crosses
  // the network, so with a node count that does not halve evenly (3 nodes: {0,1} and {2}) a round's median
  // would fail the network group of a healthy job. Single nodes are judged against the median of every
  // node alone (the last round holds them all), groups of several nodes against those of their round.
  // A single node carried unchanged into later rounds is measured once per round: it keeps its best figure
  // in all of them, so one noisy repeat on a loaded host does not mark a healthy node LOW.
  for (std::size_t r = 0; r < rounds.size(); ++r)
    for (auto& m : rounds[r]) {
      if (m.group.size() != 1) continue;
      for (const auto& other : rounds)
        for (const auto& o : other)
          if (o.group == m.group && std::isfinite(o.busbw_gbps) &&
              !(std::isfinite(m.busbw_gbps) && m.busbw_gbps >= o.busbw_gbps))
            m.busbw_gbps = o.busbw_gbps;
    }
  std::vector<double> nodes_alone;
  if (!rounds.empty())
    for (const auto& m : rounds.back())
      if (m.group.size() == 1 && std::isfinite(m.busbw_gbps)) nodes_alone.push_back(m.busbw_gbps);
  const double node_median = median_of(nodes_alone);
  for (auto& round : rounds) {
    std::vector<double> networked;
    for (const auto& m : round)
      if (m.group.size() > 1 && std::isfinite(m.busbw_gbps)) networked.push_back(m.busbw_gbps);
    const double network_median = median_of(networked);
    for (auto& m : round) {
      if (!std::isfinite(m.busbw_gbps)) continue;
      const bool alone = m.group.size() == 1;
      const double floor_gbps = alone ? node_floor_gbps : network_floor_gbps;
      const double median = alone ? node_median : network_median;
      const std::size_t peers = alone ? nodes_alone.size() : networked.size();
      m.below_floor = (floor_gbps > 0 && m.busbw_gbps < floor_gbps) ||
                      (peers >= 2 && m.busbw_gbps < median * (1 - outlier_threshold));
    }
  }
  // A group below floor none of whose smaller groups (any later round, inside it) is below floor, or that
  // has none, is where the problem sits: name its nodes. Any later round, not only the next: a subgroup
  // that could not be judged (the only multi-node group of its round, or one rank: no traffic) does not
  // clear its parent when a smaller group inside it was found below floor (5 nodes named 3 for one).
  BisectionVerdict v;
  for (std::size_t r = 0; r < rounds.size(); ++r)
    for (const auto& m : rounds[r]) {
      if (!m.below_floor) continue;
      bool child_below = false;
      bool has_children = false;
      for (std::size_t rr = r + 1; rr < rounds.size(); ++rr)
        for (const auto& c : rounds[rr])
          if (c.group.first >= m.group.first && c.group.last <= m.group.last && !(c.group == m.group)) {
            if (rr == r + 1) has_children = true;
            child_below = child_below || c.below_floor;
          }
      // A single node repeated unchanged into the next round is judged there.
      if (r + 1 < rounds.size() && !has_children) continue;
      if (child_below) continue;
      // A node in a smaller group of several nodes that passed is cleared: a slow node, or its link to the
      // network, drags every networked group it is in. (3 nodes of one rank each, the third slow: {0,1}
      // passed and {2} could not be measured alone; all three were named.) A node alone clears nothing
      // (it measures no network), and when every node is cleared the problem lies between the passing
      // groups, so all are named, as before.
      std::vector<int> suspects;
      for (int node = m.group.first; node < m.group.last; ++node) {
        bool cleared = false;
        for (std::size_t rr = r + 1; rr < rounds.size() && !cleared; ++rr)
          for (const auto& c : rounds[rr])
            if (c.group.size() > 1 && c.group.first >= m.group.first && c.group.last <= m.group.last &&
                node >= c.group.first && node < c.group.last && std::isfinite(c.busbw_gbps) && !c.below_floor)
              cleared = true;
        if (!cleared) suspects.push_back(node);
      }
      if (suspects.empty())
        for (int node = m.group.first; node < m.group.last; ++node) suspects.push_back(node);
      v.nodes.insert(v.nodes.end(), suspects.begin(), suspects.end());
    }
  std::sort(v.nodes.begin(), v.nodes.end());
  v.nodes.erase(std::unique(v.nodes.begin(), v.nodes.end()), v.nodes.end());
  return v;
}

BisectionRun run_bisection(const MpiContext& mpi, Backend& backend, Communicator& comm,
                           const BisectionOptions& o) {
  BisectionRun run;
  run.hosts = mpi.unique_hosts();
  std::vector<int> node_of(static_cast<std::size_t>(mpi.size()));
  for (int r = 0; r < mpi.size(); ++r)
    node_of[static_cast<std::size_t>(r)] = static_cast<int>(
        std::find(run.hosts.begin(), run.hosts.end(), mpi.hostnames()[static_cast<std::size_t>(r)]) -
        run.hosts.begin());
  const int my_node = node_of[static_cast<std::size_t>(mpi.rank())];

  const std::size_t count = std::max<std::size_t>(1, o.bytes / sizeof(float));
  auto buffer = backend.allocate(count * sizeof(float));
  {
    std::vector<float> host(count);
    fill_random_host(host.data(), count, DType::fp32,
                     derive_seed(0xb15ec7, static_cast<std::uint64_t>(mpi.rank())));
    backend.copy_to_device(buffer, host.data(), count * sizeof(float));
    backend.synchronize();
  }

  // The all-reduce bus bandwidth of one group (its own communicator), every rank of it calling.
  const auto measure_group = [&](Communicator& sub) {
    auto once = [&] {
      sub.allreduce(buffer.data(), buffer.data(), count, DType::fp32, ReduceOp::sum);
      sub.synchronize();
    };
    MeasureLoop loop;
    loop.warmup = o.warmup;
    loop.iters = o.iterations;
    loop.before_timing = loop.after_timing = [&] { sub.synchronize(); };
    const double best = best_iteration_seconds(backend, loop, once);
    // nccl-tests' all-reduce bus bandwidth, algbw · 2(n − 1)/n, of the best iteration (as the p2p matrix: a
    // slow node is slow every time, a loaded host's scheduling stalls are not).
    const double n = sub.size();
    return static_cast<double>(count * sizeof(float)) / best / 1e9 * 2 * (n - 1) / n;
  };

  // Passes over all rounds, each group keeping its best figure: a slow node is slow in every pass, while a
  // loaded host's scheduling stalls (which can slow one small group by 30x) do not repeat pass after pass.
  const auto plan = plan_bisection(static_cast<int>(run.hosts.size()));
  const int passes = o.confirm_passes + 1;
  ProgressMeter progress("locate bisection", static_cast<double>(passes) * static_cast<double>(plan.size()));
  for (int pass = 0; pass <= o.confirm_passes; ++pass)
    for (std::size_t ri = 0; ri < plan.size(); ++ri) {
      const auto& groups = plan[ri];
      int color = 0;
      for (int g = 0; g < static_cast<int>(groups.size()); ++g)
        if (my_node >= groups[static_cast<std::size_t>(g)].first &&
            my_node < groups[static_cast<std::size_t>(g)].last)
          color = g;
      auto sub = comm.split(color, mpi.rank());
      const double busbw = sub->size() > 1 ? measure_group(*sub) : kNaN;
      // The group's figure as its slowest rank saw it; rank order within a group is irrelevant.
      const auto all = allgather(mpi, sub->rank() == 0 ? busbw : -1.0);
      std::vector<GroupMeasurement> round;
      for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
        GroupMeasurement m;
        m.group = groups[static_cast<std::size_t>(g)];
        for (int r = 0; r < mpi.size(); ++r) {
          const int node = node_of[static_cast<std::size_t>(r)];
          if (node < m.group.first || node >= m.group.last) continue;
          if (m.ranks++ == 0) m.busbw_gbps = all[static_cast<std::size_t>(r)];
        }
        if (m.busbw_gbps < 0) m.busbw_gbps = kNaN;
        round.push_back(m);
      }
      if (pass == 0) {
        run.rounds.push_back(std::move(round));
      } else {
        for (std::size_t g = 0; g < round.size(); ++g)
          if (std::isfinite(round[g].busbw_gbps))
            run.rounds[ri][g].busbw_gbps = std::max(run.rounds[ri][g].busbw_gbps, round[g].busbw_gbps);
      }
      comm.barrier();
      if (progress.due())
        progress.update(
            static_cast<double>(pass) * static_cast<double>(plan.size()) + static_cast<double>(ri + 1),
            fmt::format("pass {}/{}, round {}/{}", pass + 1, passes, ri + 1, plan.size()));
    }
  run.verdict = judge_bisection(run.rounds, o.node_floor_gbps, o.network_floor_gbps, o.outlier_threshold);
  // Nodes named together because none could be measured alone: each measured once more, with a node that
  // was not named (the pairs of a batch at once, disjoint; batches in turn), in as many passes as the rounds,
  // best figure kept.
  run.cross_pairs = plan_cross_pairs(run.rounds, run.verdict, static_cast<int>(run.hosts.size()));
  if (!run.cross_pairs.empty()) {
    const auto pairs = static_cast<int>(run.cross_pairs.size());
    for (auto& c : run.cross_pairs)
      for (const int node : node_of) c.ranks += node == c.suspect || node == c.partner ? 1 : 0;
    const int batches = run.cross_pairs.back().batch + 1;
    for (int pass = 0; pass <= o.confirm_passes; ++pass)
      for (int batch = 0; batch < batches; ++batch) {
        int color = pairs;  // not in a pair of this batch: a group of its own that measures nothing
        for (int i = 0; i < pairs; ++i) {
          const auto& c = run.cross_pairs[static_cast<std::size_t>(i)];
          if (c.batch == batch && (my_node == c.suspect || my_node == c.partner)) color = i;
        }
        auto sub = comm.split(color, mpi.rank());
        const double busbw = color < pairs && sub->size() > 1 ? measure_group(*sub) : kNaN;
        const auto all = allgather(mpi, sub->rank() == 0 && color < pairs ? busbw : -1.0);
        for (int r = 0; r < mpi.size(); ++r) {
          const double b = all[static_cast<std::size_t>(r)];
          if (!(b >= 0)) continue;  // not a pair's first rank
          const int node = node_of[static_cast<std::size_t>(r)];
          for (auto& c : run.cross_pairs)
            if (c.batch == batch && (node == c.suspect || node == c.partner))
              if (!std::isfinite(c.busbw_gbps) || b > c.busbw_gbps) c.busbw_gbps = b;
        }
        comm.barrier();
      }
    run.verdict = judge_cross_pairs(run.cross_pairs, run.rounds, run.verdict, o.network_floor_gbps,
                                    o.outlier_threshold);
  }
  return run;
}

std::vector<CrossPair> plan_cross_pairs(const std::vector<std::vector<GroupMeasurement>>& rounds,
                                        const BisectionVerdict& verdict, int nodes) {
  std::vector<CrossPair> pairs;
  if (rounds.empty() || verdict.nodes.empty()) return pairs;
  std::vector<int> unmeasured, partners;
  for (const int n : verdict.nodes) {
    const bool alone =
        std::any_of(rounds.back().begin(), rounds.back().end(), [&](const GroupMeasurement& m) {
          return m.group == NodeGroup{n, n + 1} && std::isfinite(m.busbw_gbps);
        });
    if (!alone) unmeasured.push_back(n);
  }
  for (int n = 0; n < nodes; ++n)
    if (!std::binary_search(verdict.nodes.begin(), verdict.nodes.end(), n)) partners.push_back(n);
  if (partners.empty()) return pairs;
  for (std::size_t i = 0; i < unmeasured.size(); ++i)
    pairs.push_back({unmeasured[i], partners[i % partners.size()], kNaN, 0, false,
                     static_cast<int>(i / partners.size())});
  return pairs;
}

BisectionVerdict judge_cross_pairs(std::vector<CrossPair>& pairs,
                                   const std::vector<std::vector<GroupMeasurement>>& rounds,
                                   const BisectionVerdict& verdict, double network_floor_gbps,
                                   double outlier_threshold) {
  // Like with like: a cross pair is two nodes over the network, as the two-node groups of the plan are.
  std::vector<double> pairs_passed, groups_passed;
  for (const auto& round : rounds)
    for (const auto& m : round)
      if (m.group.size() > 1 && std::isfinite(m.busbw_gbps) && !m.below_floor) {
        groups_passed.push_back(m.busbw_gbps);
        if (m.group.size() == 2) pairs_passed.push_back(m.busbw_gbps);
      }
  const double reference = median_of(pairs_passed.empty() ? groups_passed : pairs_passed);
  for (auto& p : pairs)
    p.below_floor = std::isfinite(p.busbw_gbps) &&
                    ((network_floor_gbps > 0 && p.busbw_gbps < network_floor_gbps) ||
                     (std::isfinite(reference) && p.busbw_gbps < reference * (1 - outlier_threshold)));
  // Runs of adjacent named nodes (the groups they were named in): clear the passing ones only where some
  // node of the run failed its own cross-check, or where not every node of the run was checked.
  BisectionVerdict out;
  const auto& named = verdict.nodes;
  for (std::size_t begin = 0; begin < named.size();) {
    std::size_t end = begin + 1;
    while (end < named.size() && named[end] == named[end - 1] + 1) ++end;
    std::vector<int> cleared;
    bool any_slow = false, all_checked = true;
    for (std::size_t i = begin; i < end; ++i) {
      const auto p =
          std::find_if(pairs.begin(), pairs.end(), [&](const CrossPair& c) { return c.suspect == named[i]; });
      if (p == pairs.end() || !std::isfinite(p->busbw_gbps)) {
        all_checked = false;
      } else if (p->below_floor) {
        any_slow = true;
      } else {
        cleared.push_back(named[i]);
      }
    }
    const bool only_together = all_checked && !any_slow;
    for (std::size_t i = begin; i < end; ++i)
      if (only_together || std::find(cleared.begin(), cleared.end(), named[i]) == cleared.end())
        out.nodes.push_back(named[i]);
    begin = end;
  }
  return out;
}

reports::Result bisection_result(const BisectionRun& run, const BisectionOptions& o) {
  reports::Result r;
  r.benchmark = "locate";
  r.name = fmt::format("bisection/allreduce/{}", o.bytes);
  r.params = {{"test", "bisection"},
              {"bytes", o.bytes},
              {"nodes", run.hosts.size()},
              {"iterations", o.iterations},
              {"node_floor_gbps", o.node_floor_gbps},
              {"network_floor_gbps", o.network_floor_gbps},
              {"outlier_threshold", o.outlier_threshold}};
  // Without a floor a group is judged only against peers of its kind (two or more in its round, or two
  // nodes alone): 3 nodes of one rank each have none, and a pass there means nothing was judged.
  bool judged = o.node_floor_gbps > 0 || o.network_floor_gbps > 0;
  for (const auto& round : run.rounds) {
    int networked = 0, alone = 0;
    for (const auto& m : round)
      if (std::isfinite(m.busbw_gbps)) ++(m.group.size() > 1 ? networked : alone);
    judged = judged || networked >= 2 || (&round == &run.rounds.back() && alone >= 2);
  }
  if (!run.rounds.empty() && std::isfinite(run.rounds.front().front().busbw_gbps))
    r.set_metric("busbw_gbps",
                 {run.rounds.front().front().busbw_gbps, "GB/s", reports::Better::higher, std::nullopt});
  r.set_metric("slow_nodes", {static_cast<double>(run.verdict.nodes.size()), "count", reports::Better::lower,
                              std::nullopt});
  reports::BisectionExtra x;
  for (const auto& round : run.rounds) {
    auto& groups = x.rounds.emplace_back();
    for (const auto& m : round) {
      std::vector<std::string> hosts;
      for (int i = m.group.first; i < m.group.last; ++i)
        hosts.push_back(run.hosts[static_cast<std::size_t>(i)]);
      groups.push_back({hosts, m.ranks, m.busbw_gbps, m.below_floor});
    }
  }
  for (const auto& c : run.cross_pairs)
    x.cross_pairs.push_back(
        {{run.hosts[static_cast<std::size_t>(c.suspect)], run.hosts[static_cast<std::size_t>(c.partner)]},
         c.ranks,
         c.busbw_gbps,
         c.below_floor});
  for (int n : run.verdict.nodes) x.slow_nodes.push_back(run.hosts[static_cast<std::size_t>(n)]);
  reports::write_bisection_extra(r, x);
  if (!run.verdict.nodes.empty()) {
    std::string msg;
    for (const auto& h : x.slow_nodes) msg += (msg.empty() ? "" : ", ") + h;
    r.fail("all-reduce below floor because of node(s) " + msg);
  }
  // One rank has no all-reduce: nothing was measured, so nothing passed (a floor could never fail).
  const bool measured = std::any_of(run.rounds.begin(), run.rounds.end(), [](const auto& round) {
    return std::any_of(round.begin(), round.end(),
                       [](const GroupMeasurement& m) { return std::isfinite(m.busbw_gbps); });
  });
  if (!measured) {
    r.status = reports::Status::skipped;
    r.error = "one rank: an all-reduce needs two or more; run under mpirun";
  } else if (!judged) {  // measured, but against nothing: not a pass
    r.status = reports::Status::skipped;
    r.error =
        "nothing judged: no group had a peer of its kind to compare with and no floor was given "
        "(--allreduce-floor or --floors); the p2p test compares the nodes pairwise";
  }
  return r;
}

}  // namespace fb::workloads
