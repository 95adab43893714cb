#include "workloads/p2p_matrix.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/progress_meter.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "reports/locate_console.hpp"
#include "reports/locate_extra.hpp"
#include "workloads/measurement_loop.hpp"
#include "workloads/round_robin_schedule.hpp"

namespace fb::workloads {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double median_of(const std::vector<double>& v) {
  return v.empty() ? kNaN : summarize(v).median;
}

std::vector<std::vector<double>> square(std::size_t n, double fill) {
  return std::vector<std::vector<double>>(n, std::vector<double>(n, fill));
}

}  // namespace

std::string P2pEndpoint::label() const {
  return fmt::format("{} (rank {}, GPU {})", host, rank, local_rank);
}

std::vector<P2pEndpoint> p2p_endpoints(P2pScope scope, const std::vector<std::string>& hosts,
                                       const std::vector<int>& local_ranks) {
  std::vector<P2pEndpoint> out;
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    if (scope == P2pScope::node &&
        std::any_of(out.begin(), out.end(), [&](const P2pEndpoint& e) { return e.host == hosts[r]; }))
      continue;
    out.push_back({static_cast<int>(r), hosts[r], local_ranks[r]});
  }
  return out;
}

std::vector<std::pair<int, int>> P2pVerdict::flagged_links() const {
  std::vector<std::pair<int, int>> out;
  for (const auto& f : flags) out.emplace_back(std::min(f.from, f.to), std::max(f.from, f.to));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

P2pVerdict judge_p2p(const P2pMatrix& m, double min_bw_gbps, double outlier_threshold,
                     std::string_view min_bw_source) {
  P2pVerdict v;
  const auto n = m.bw_gbps.size();
  std::vector<double> all;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j && std::isfinite(m.bw_gbps[i][j])) all.push_back(m.bw_gbps[i][j]);
  v.median_gbps = median_of(all);
  // The reference is the median over endpoints of each endpoint's best direction, not the median of all
  // directions: one slow endpoint slows 2(n − 1) of the n(n − 1) directions, the majority for n = 3 (the
  // median would then be the slow figure), while every healthy endpoint keeps a fast direction to another
  // healthy one as long as fewer than half of the endpoints are slow.
  std::vector<double> best(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j && std::isfinite(m.bw_gbps[i][j])) {
        best[i] = std::max(best[i], m.bw_gbps[i][j]);
        best[j] = std::max(best[j], m.bw_gbps[i][j]);
      }
  std::vector<double> bests;
  for (double b : best)
    if (b >= 0) bests.push_back(b);
  v.reference_gbps = median_of(bests);
  const double relative_floor = v.reference_gbps * (1 - outlier_threshold);
  std::map<std::pair<int, int>, bool> flagged_links;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const double bw = m.bw_gbps[i][j];
      std::string reason;
      if (!std::isfinite(bw))
        reason = "not measured";
      else if (min_bw_gbps > 0 && bw < min_bw_gbps)
        reason = fmt::format("below {} {:g} GB/s", min_bw_source, min_bw_gbps);
      else if (n > 2 && bw < relative_floor)
        reason = fmt::format("{:.0f}% below the reference {:.3g} GB/s", 100 * (1 - bw / v.reference_gbps),
                             v.reference_gbps);
      if (reason.empty()) continue;
      v.flags.push_back({static_cast<int>(i), static_cast<int>(j), bw, reason});
      flagged_links[{static_cast<int>(std::min(i, j)), static_cast<int>(std::max(i, j))}] = true;
    }
  // An endpoint on at least three quarters of its n − 1 links is the problem, not each of those links (a
  // quarter of slack so that one healthy link measured during a stall does not acquit a slow rank).
  std::vector<int> degree(n, 0);
  for (const auto& [link, _] : flagged_links) {
    ++degree[static_cast<std::size_t>(link.first)];
    ++degree[static_cast<std::size_t>(link.second)];
  }
  for (std::size_t e = 0; e < n; ++e)
    if (n >= 3 && 4 * degree[e] >= 3 * static_cast<int>(n - 1))
      v.slow_endpoints.push_back(static_cast<int>(e));
  auto named = [&](int e) {
    return std::find(v.slow_endpoints.begin(), v.slow_endpoints.end(), e) != v.slow_endpoints.end();
  };
  for (const auto& [link, _] : flagged_links)
    if (!named(link.first) && !named(link.second)) v.slow_links.push_back(link);
  return v;
}

namespace {

// The endpoints, one per rank or one per node, from every rank's host name and local rank.
std::vector<P2pEndpoint> gather_endpoints(const MpiContext& mpi, P2pScope scope) {
  std::vector<int> local_ranks;
  for (double v : allgather(mpi, static_cast<double>(mpi.local_rank())))
    local_ranks.push_back(static_cast<int>(v));
  return p2p_endpoints(scope, mpi.hostnames(), local_ranks);
}

// This rank's side of the pairwise transfers: its seeded send buffer (the largest size) and the
// one-element acknowledgement.
struct PairTransfers {
  PairTransfers(const MpiContext& world, Backend& device, Communicator& communicator,
                const std::vector<P2pEndpoint>& endpoints, const P2pOptions& o)
      : mpi(world), backend(device), comm(communicator) {
    for (const auto& e : endpoints) ranks.push_back(e.rank);
    const std::uint64_t max_bytes = *std::max_element(o.sizes.begin(), o.sizes.end());
    const std::size_t max_count = std::max<std::size_t>(1, max_bytes / sizeof(float));
    data = backend.allocate(max_count * sizeof(float));
    ack = backend.allocate(sizeof(float));
    std::vector<float> host(max_count);
    fill_random_host(host.data(), max_count, DType::fp32,
                     derive_seed(o.seed, static_cast<std::uint64_t>(mpi.rank())));
    backend.copy_to_device(data, host.data(), max_count * sizeof(float));
    const float one = 1;
    backend.copy_to_device(ack, &one, sizeof(float));
    backend.synchronize();
  }

  bool is_sender(int from) const { return mpi.rank() == ranks[static_cast<std::size_t>(from)]; }
  bool in_pair(int a, int b) const {
    return mpi.rank() == ranks[static_cast<std::size_t>(a)] ||
           mpi.rank() == ranks[static_cast<std::size_t>(b)];
  }

  // Best seconds of `elements` from endpoint `from` to `to` plus a one-element acknowledgement back, as the
  // sender sees it (both ends call this; only the sender's figure is used).
  double time_transfer(int from, int to, std::size_t elements, int warmup, int iterations) {
    const int rf = ranks[static_cast<std::size_t>(from)];
    const int rt = ranks[static_cast<std::size_t>(to)];
    const bool sender = mpi.rank() == rf;
    MeasureLoop loop;
    loop.warmup = warmup;
    loop.iters = iterations;
    loop.before_timing = loop.after_timing = [&] { comm.synchronize(); };
    return best_iteration_seconds(backend, loop, [&] {
      if (sender) {
        comm.send(data.data(), elements, DType::fp32, rt);
        comm.recv(ack.data(), 1, DType::fp32, rt);
      } else {
        comm.recv(data.data(), elements, DType::fp32, rf);
        comm.send(ack.data(), 1, DType::fp32, rf);
      }
      comm.synchronize();
    });
  }

  const MpiContext& mpi;
  Backend& backend;
  Communicator& comm;
  std::vector<int> ranks;  // world rank of each endpoint
  DeviceBuffer data, ack;
};

// Per size, bandwidth (GB/s) and latency (us) as flat n x n [from][to] arrays.
struct FlatMatrices {
  std::vector<std::vector<double>> bw, lat;
};

// Every pair in its round, both directions, every size. Rows this rank measured (as the sender), zero
// elsewhere: summed over ranks afterwards, every entry has one measurer.
FlatMatrices measure_rounds(PairTransfers& t, const std::vector<std::vector<Pair>>& schedule, std::size_t n,
                            const P2pOptions& o) {
  FlatMatrices f{std::vector<std::vector<double>>(o.sizes.size(), std::vector<double>(n * n, 0.0)),
                 std::vector<std::vector<double>>(o.sizes.size(), std::vector<double>(n * n, 0.0))};
  ProgressMeter progress("locate p2p", static_cast<double>(schedule.size()));
  for (std::size_t r = 0; r < schedule.size(); ++r) {
    const auto& round = schedule[r];
    for (const auto& [a, b] : round) {
      if (!t.in_pair(a, b)) continue;
      for (std::size_t s = 0; s < o.sizes.size(); ++s) {
        const std::size_t count = std::max<std::size_t>(1, o.sizes[s] / sizeof(float));
        for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
          const double t_bw = t.time_transfer(from, to, count, o.warmup, o.iterations);
          const double t_lat = t.time_transfer(from, to, 1, o.warmup, o.iterations);
          if (t.is_sender(from)) {
            const auto k = static_cast<std::size_t>(from) * n + static_cast<std::size_t>(to);
            f.bw[s][k] = static_cast<double>(count * sizeof(float)) / t_bw / 1e9;
            f.lat[s][k] = t_lat / 2 * 1e6;  // one way: half the round trip of one element each way
          }
        }
      }
    }
    t.comm.barrier();  // rounds do not overlap
    if (progress.due())
      progress.update(static_cast<double>(r + 1),
                      fmt::format("round {}/{} of the pair tournament", r + 1, schedule.size()));
  }
  return f;
}

// The full matrices, one per size in option order: every rank's rows summed over the ranks.
std::vector<P2pMatrix> sum_matrices(const MpiContext& mpi, FlatMatrices& f, std::size_t n,
                                    const P2pOptions& o) {
  std::vector<P2pMatrix> out;
  for (std::size_t s = 0; s < o.sizes.size(); ++s) {
    allreduce(mpi, std::span<double>(f.bw[s]), RankReduce::sum);
    allreduce(mpi, std::span<double>(f.lat[s]), RankReduce::sum);
    P2pMatrix m;
    m.bytes = std::max<std::size_t>(1, o.sizes[s] / sizeof(float)) * sizeof(float);
    m.bw_gbps = square(n, kNaN);
    m.latency_us = square(n, kNaN);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) {
          m.bw_gbps[i][j] = f.bw[s][i * n + j];
          m.latency_us[i][j] = f.lat[s][i * n + j];
        }
    out.push_back(std::move(m));
  }
  return out;
}

// Confirmation: a flagged link is measured again, alone, in each of `confirm_passes` passes, and keeps
// its best figure. A slow link stays slow; a link that met a scheduling stall of a loaded host recovers.
void confirm_flagged(PairTransfers& t, P2pMatrix& largest, P2pVerdict& verdict, const P2pOptions& o) {
  const std::size_t n = largest.bw_gbps.size();
  const std::size_t largest_count = largest.bytes / sizeof(float);
  // A slow link is slow here too: with the tournament's progress at 100%, these passes can take as long
  // again.
  const double links = static_cast<double>(verdict.flagged_links().size());
  ProgressMeter progress("locate p2p confirmation", links * std::max(o.confirm_passes, 1));
  double done = 0;
  for (int pass = 0; pass < o.confirm_passes && !verdict.pass(); ++pass) {
    std::vector<double> again(n * n, 0.0);
    const auto flagged = verdict.flagged_links();
    std::size_t link = 0;
    for (const auto& [a, b] : flagged) {
      if (t.in_pair(a, b))
        for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
          const double secs = t.time_transfer(from, to, largest_count, 0, o.iterations);
          if (t.is_sender(from))
            again[static_cast<std::size_t>(from) * n + static_cast<std::size_t>(to)] =
                static_cast<double>(largest_count * sizeof(float)) / secs / 1e9;
        }
      t.mpi.barrier_sleeping(1);  // one link at a time; the ranks outside it sleep rather than spin
      done += 1;
      ++link;
      if (progress.due())
        progress.update(done, fmt::format("pass {}/{}, flagged link {}/{} measured again alone", pass + 1,
                                          o.confirm_passes, link, flagged.size()));
    }
    allreduce(t.mpi, std::span<double>(again), RankReduce::max);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j)
        if (i != j) largest.bw_gbps[i][j] = std::max(largest.bw_gbps[i][j], again[i * n + j]);
    verdict = judge_p2p(largest, o.min_bw_gbps, o.outlier_threshold, o.min_bw_source);
  }
}

}  // namespace

P2pRun measure_p2p_matrix(const MpiContext& mpi, Backend& backend, Communicator& comm, const P2pOptions& o) {
  P2pRun run;
  run.endpoints = gather_endpoints(mpi, o.scope);
  const auto n = run.endpoints.size();
  const auto schedule = round_robin_schedule(static_cast<int>(n));
  run.rounds = static_cast<int>(schedule.size());

  PairTransfers transfers(mpi, backend, comm, run.endpoints, o);
  auto flat = measure_rounds(transfers, schedule, n, o);
  run.matrices = sum_matrices(mpi, flat, n, o);
  auto& largest = *std::max_element(run.matrices.begin(), run.matrices.end(),
                                    [](const P2pMatrix& x, const P2pMatrix& y) { return x.bytes < y.bytes; });
  run.verdict = judge_p2p(largest, o.min_bw_gbps, o.outlier_threshold, o.min_bw_source);
  confirm_flagged(transfers, largest, run.verdict, o);
  return run;
}

namespace {

reports::LocateEndpoint endpoint_extra(const P2pEndpoint& e) {
  return {e.rank, e.host, e.local_rank};
}

reports::P2pVerdictExtra verdict_extra(const P2pRun& run) {
  const auto& v = run.verdict;
  const auto ep = [&](int e) { return endpoint_extra(run.endpoints[static_cast<std::size_t>(e)]); };
  reports::P2pVerdictExtra x;
  x.median_gbps = v.median_gbps;
  x.reference_gbps = v.reference_gbps;
  for (int e : v.slow_endpoints) x.slow_endpoints.push_back(ep(e));
  for (const auto& [a, b] : v.slow_links) x.slow_links.emplace_back(ep(a), ep(b));
  for (const auto& f : v.flags) x.flags.push_back({ep(f.from), ep(f.to), f.bw_gbps, f.reason});
  return x;
}

std::string scope_name(P2pScope s) {
  return s == P2pScope::node ? "node" : "rank";
}

}  // namespace

std::vector<reports::Result> p2p_results(const P2pRun& run, const P2pOptions& o) {
  std::vector<reports::Result> out;
  std::vector<std::string> labels;
  std::vector<reports::LocateEndpoint> endpoints;
  for (const auto& e : run.endpoints) {
    labels.push_back(e.label());
    endpoints.push_back(endpoint_extra(e));
  }
  std::uint64_t largest = 0;
  for (const auto& m : run.matrices) largest = std::max(largest, m.bytes);
  for (const auto& m : run.matrices) {
    reports::Result r;
    r.benchmark = "locate";
    r.name = fmt::format("p2p/{}/{}", scope_name(o.scope), m.bytes);
    r.params = {{"test", "p2p"},
                {"scope", scope_name(o.scope)},
                {"bytes", m.bytes},
                {"endpoints", run.endpoints.size()},
                {"rounds", run.rounds},
                {"iterations", o.iterations},
                {"outlier_threshold", o.outlier_threshold}};
    // The absolute floor the verdict used, and where it came from; none: null.
    r.params["min_p2p_bw_gbps"] = o.min_bw_gbps > 0 ? nlohmann::json(o.min_bw_gbps) : nlohmann::json(nullptr);
    if (o.min_bw_gbps > 0) r.params["min_p2p_bw_from"] = o.min_bw_source;
    std::vector<double> bws, lats;
    for (std::size_t i = 0; i < m.bw_gbps.size(); ++i)
      for (std::size_t j = 0; j < m.bw_gbps.size(); ++j)
        if (i != j) {
          bws.push_back(m.bw_gbps[i][j]);
          lats.push_back(m.latency_us[i][j]);
        }
    if (!bws.empty()) {
      r.set_metric("p2p_bw_gbps", reports::metric_from_samples(bws, "GB/s", reports::Better::higher));
      r.set_metric("p2p_latency_us", reports::metric_from_samples(lats, "us", reports::Better::lower));
      r.set_metric("p2p_min_bw_gbps", {*std::min_element(bws.begin(), bws.end()), "GB/s",
                                       reports::Better::higher, std::nullopt});
    }
    reports::P2pExtra x{{labels, m.bytes, m.bw_gbps, m.latency_us}, endpoints, std::nullopt};
    if (m.bytes == largest) x.verdict = verdict_extra(run);
    reports::write_p2p_extra(r, x);
    if (m.bytes == largest) {
      const auto& v = run.verdict;
      r.set_metric("flagged_directions",
                   {static_cast<double>(v.flags.size()), "count", reports::Better::lower, std::nullopt});
      if (!v.pass()) {
        std::string msg;
        for (const auto& line : reports::p2p_verdict_lines(r)) msg += (msg.empty() ? "" : "; ") + line;
        r.fail(msg);
      }
    }
    // One endpoint has no peer: nothing was measured, so nothing passed (a floor could never fail).
    if (run.endpoints.size() < 2) {
      r.status = reports::Status::skipped;
      r.error = fmt::format("{} endpoint: no pair to measure; {}", run.endpoints.size(),
                            o.scope == P2pScope::node
                                ? "--scope node takes one rank per host: add hosts, or use --scope rank"
                                : "run under mpirun with 2 or more ranks");
    }
    // Two endpoints and no floor: their one link has no peer link to be an outlier against (the relative
    // test needs 3 endpoints), so a link of any speed would pass.
    if (run.endpoints.size() == 2 && o.min_bw_gbps <= 0 && r.status == reports::Status::ok) {
      r.status = reports::Status::skipped;
      r.error =
          "2 endpoints and no floor: their one link has nothing to be judged against (the outlier test "
          "needs 3 or more endpoints); give --min-p2p-bw or --floors to judge it";
    }
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json p2p_summary(const P2pRun& run) {
  return reports::p2p_verdict_json(verdict_extra(run));
}

}  // namespace fb::workloads
