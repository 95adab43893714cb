#include "workloads/burnin.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <span>

#include <fmt/format.h>

#include "core/call_log.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "kernels/gemm_engine.hpp"
#include "reports/burnin_extra.hpp"

namespace fb::workloads {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string who(const RankChecks& r) {
  return fmt::format("rank {} ({}, GPU {})", r.rank, r.host, r.local_rank);
}

}  // namespace

std::uint64_t checksum_bytes(const void* data, std::size_t bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64: offset basis and prime (Fowler, Noll, Vo)
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

void judge_burnin_check(const std::vector<RankChecks>& ranks, std::size_t c, std::set<int>& reported,
                        std::vector<BurninProblem>& out) {
  // The results of each device model at this check, from the ranks that still repeat their own first result
  // (one that changed is explained by that, and must not split the vote of the others).
  std::map<std::string, std::map<std::uint64_t, int>> votes;
  for (const auto& r : ranks)
    if (c < r.checksums.size() && r.checksums[c] == r.checksums[0]) ++votes[r.device][r.checksums[c]];
  for (const auto& r : ranks) {
    if (c >= r.checksums.size() || reported.contains(r.rank)) continue;
    std::string reason;
    if (c > 0 && r.checksums[c] != r.checksums[0]) {
      reason = fmt::format("checksum {:016x} at check {} differs from its own first result {:016x}",
                           r.checksums[c], c, r.checksums[0]);
    } else if (const auto& v = votes[r.device]; v.size() > 1) {
      int voters = 0;
      for (const auto& [sum, n] : v) voters += n;
      const auto majority = std::max_element(
          v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      if (majority->second * 2 > voters) {
        if (r.checksums[c] != majority->first)
          reason = fmt::format("checksum {:016x} at check {} differs from {:016x} of {} other {} rank(s)",
                               r.checksums[c], c, majority->first, majority->second, r.device);
      } else {
        // Two ranks that disagree (or two against two): a wrong result, but no telling which. Every one of
        // them fails, rather than the job passing.
        reason = fmt::format(
            "checksum {:016x} at check {}: the {} {} rank(s) disagree with no majority ({} distinct "
            "results), so "
            "the wrong one cannot be told apart",
            r.checksums[c], c, voters, r.device, v.size());
      }
    }
    if (reason.empty()) continue;
    reported.insert(r.rank);  // one problem per rank: the first one seen
    out.push_back({r.rank, static_cast<int>(c), c < r.at_s.size() ? r.at_s[c] : 0, reason});
  }
}

std::vector<BurninProblem> judge_burnin(const std::vector<RankChecks>& ranks) {
  std::vector<BurninProblem> out;
  std::size_t checks = 0;
  for (const auto& r : ranks) checks = std::max(checks, r.checksums.size());
  std::set<int> reported;
  for (std::size_t c = 0; c < checks; ++c) judge_burnin_check(ranks, c, reported, out);
  return out;
}

kernels::GemmEngineOptions burnin_engine_options(int local_ranks) {
  kernels::GemmEngineOptions eo;
  // One OpenBLAS thread per rank on host: the result must not depend on a thread count that can differ
  // between nodes (run one rank per core to load every core).
  eo.host_threads = 1;
  eo.local_ranks = local_ranks;
  // cuBLASLt's heuristic first choice, untimed: autotuning times candidates on each rank and may keep
  // another algorithm (another tile or split-K, so other rounding) on one GPU than on its peers, and
  // judge_burnin would call a healthy GPU's different bits corruption.
  eo.autotune = 1;
  return eo;
}

namespace {

// The burn-in GEMM, C = A·B with m = n = k = size in fp32, prepared on this rank's device; `host` receives C.
struct BurninGemm {
  BurninGemm(const MpiContext& mpi, Backend& device, std::int64_t size, std::uint64_t seed)
      : backend(device) {
    engine = kernels::make_gemm_engine(backend, DType::fp32, burnin_engine_options(mpi.local_size()));
    p.m = p.n = p.k = size;
    elements = static_cast<std::size_t>(size * size);
    a = backend.allocate(elements * sizeof(float));
    b = backend.allocate(elements * sizeof(float));
    c = backend.allocate(elements * sizeof(float));
    host.resize(elements);
    // The same inputs on every rank: identical devices must give identical bits.
    fill_random_host(host.data(), elements, DType::fp32, derive_seed(seed, 0xa));
    backend.copy_to_device(a, host.data(), elements * sizeof(float));
    fill_random_host(host.data(), elements, DType::fp32, derive_seed(seed, 0xb));
    backend.copy_to_device(b, host.data(), elements * sizeof(float));
    engine->prepare(p, a.data(), b.data(), c.data());
    backend.synchronize();
  }

  void run() { engine->run(p, a.data(), b.data(), c.data()); }

  // Runs the GEMM and returns the checksum of C as read back; `flip_bit` corrupts it first (injected).
  std::uint64_t checked_run(bool flip_bit) {
    run();
    backend.copy_to_host(host.data(), c, elements * sizeof(float));
    backend.synchronize();
    // The injected silent data corruption: one bit of one element, as if the device computed it wrong.
    if (flip_bit) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &host[elements / 2], sizeof bits);
      bits ^= 1u << 7;
      std::memcpy(&host[elements / 2], &bits, sizeof bits);
    }
    return checksum_bytes(host.data(), elements * sizeof(float));
  }

  Backend& backend;
  std::unique_ptr<kernels::GemmEngine> engine;
  kernels::GemmProblem p;
  std::size_t elements = 0;
  DeviceBuffer a, b, c;
  std::vector<float> host;
};

// Called after each of this rank's checks, k = 0..checks: its checksum, when it ran (seconds since the
// start) and the GEMMs run so far.
using CheckDone = std::function<void(int k, std::uint64_t checksum, double at_s, std::int64_t gemms)>;

// This rank's checks: check 0, then sustained GEMMs with check k due at k·interval, k = 1..checks.
void run_checks(const MpiContext& mpi, Backend& backend, BurninGemm& g, double interval, int checks,
                const CheckDone& done) {
  const auto& faults = injected_faults();
  std::int64_t gemms = 0;
  const double t0 = now_s();
  const auto check = [&](int k) {
    ++gemms;
    const bool sdc = faults.sdc_rank == mpi.rank() && faults.sdc_check == static_cast<std::uint64_t>(k);
    const auto sum = g.checked_run(sdc);
    done(k, sum, now_s() - t0, gemms);
  };
  check(0);
  // A 20-minute burn-in says it is alive (rank 0, stderr; --quiet silences it).
  ProgressMeter progress("burnin", checks * interval);
  for (int k = 1; k <= checks; ++k) {
    // Sustained load until this check is due, then the check (every rank does the same checks).
    while (now_s() - t0 < k * interval) {
      g.run();
      ++gemms;
      if (gemms % 16 == 0) {
        backend.synchronize();
        progress.update(now_s() - t0, fmt::format("{}/{} checks, {} GEMMs", k - 1, checks, gemms));
      }
    }
    backend.synchronize();
    check(k);
    log::debug("burnin: check {}/{} at {:.1f} s", k, checks, now_s() - t0);
  }
}

// Who every rank is (host, GPU, device model), from everyone to everyone, before the first check.
std::vector<RankChecks> rank_identities(const MpiContext& mpi, const Backend& backend) {
  char name[128] = {};
  backend.device().name.copy(name, sizeof(name) - 1);
  const auto names = allgather(mpi, std::span<const char>(name, sizeof(name)));
  const auto local_ranks = allgather(mpi, mpi.local_rank());
  std::vector<RankChecks> out;
  for (int r = 0; r < mpi.size(); ++r) {
    const auto ur = static_cast<std::size_t>(r);
    RankChecks x;
    x.rank = r;
    x.host = mpi.hostnames()[ur];
    x.local_rank = local_ranks[ur];
    x.device = std::string(names.data() + ur * sizeof(name));
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

double burnin_check_interval_s(const BurninOptions& o) {
  return o.check_interval_s > 0 ? o.check_interval_s : o.duration_s / 10;
}

double burnin_check_count(const BurninOptions& o) {
  return std::max(1.0, std::ceil(o.duration_s / burnin_check_interval_s(o) - 1e-9));
}

BurninRun run_burnin(const MpiContext& mpi, Backend& backend, const BurninOptions& o) {
  const auto so_far = o.so_far ? o.so_far : std::make_shared<BurninSoFar>();
  const std::int64_t size = o.size > 0 ? o.size : (backend.kind() == BackendKind::cuda ? 8192 : 256);
  const double interval = burnin_check_interval_s(o);
  const int checks = static_cast<int>(burnin_check_count(o));  // bounded by the command (10 million)
  BurninGemm gemm(mpi, backend, size, o.seed);
  auto ranks = rank_identities(mpi, backend);
  so_far->update([&](BurninRun& run) {
    run = {};
    run.duration_s = o.duration_s;
    run.size = size;
    run.checks_planned = checks;
    run.ranks = std::move(ranks);
  });
  const double flops =
      2.0 * static_cast<double>(size) * static_cast<double>(size) * static_cast<double>(size);
  std::set<int> reported;
  // Each check is gathered as it is taken: a few bytes per rank, and the checks are seconds to minutes apart.
  // Every rank takes the same checks, so the gathers pair up.
  run_checks(
      mpi, backend, gemm, interval, checks,
      [&](int k, std::uint64_t checksum, double at_s, std::int64_t gemms) {
        // One numbered call per check (the hang watchdog's unit: a rank that never enters it is named).
        const CallScope call("burnin_check", sizeof checksum + 2 * sizeof(double));
        const auto sums = allgather(mpi, checksum);
        const std::array<double, 2> mine{at_s, static_cast<double>(gemms)};
        const auto nums = allgather(mpi, std::span<const double>(mine));
        std::vector<BurninProblem> found;
        so_far->update([&](BurninRun& run) {
          for (auto& r : run.ranks) {
            const auto ur = static_cast<std::size_t>(r.rank);
            r.checksums.push_back(sums[ur]);
            r.at_s.push_back(nums[2 * ur]);
            r.gemms = static_cast<std::int64_t>(nums[2 * ur + 1]);
            // The GEMMs done over the time to this check, checks included: a load figure.
            r.tflops = r.at_s.back() > 0 ? flops * static_cast<double>(r.gemms) / r.at_s.back() / 1e12 : 0;
            run.elapsed_s = std::max(run.elapsed_s, r.at_s.back());
          }
          const auto before = run.problems.size();
          judge_burnin_check(run.ranks, static_cast<std::size_t>(k), reported, run.problems);
          found.assign(run.problems.begin() + static_cast<std::ptrdiff_t>(before), run.problems.end());
          for (auto& p : found)
            p.reason = fmt::format("{}: {}", who(run.ranks[static_cast<std::size_t>(p.rank)]), p.reason);
        });
        // Said when found: an operator watching a burn-in of hours sees the node at once.
        for (const auto& p : found)
          log::warn("burnin: silent data corruption: {} (at {:.1f} s)", p.reason, p.first_seen_s);
        if (o.on_check) o.on_check();
      });
  return so_far->snapshot();
}

std::vector<reports::Result> burnin_results(const BurninRun& run) {
  std::vector<reports::Result> out;
  std::vector<std::string> hosts;
  for (const auto& r : run.ranks)
    if (std::find(hosts.begin(), hosts.end(), r.host) == hosts.end()) hosts.push_back(r.host);
  for (const auto& h : hosts) {
    reports::Result res;
    res.benchmark = "burnin";
    res.name = "burnin/node/" + h;
    res.params = {{"host", h}, {"size", run.size}, {"duration_s", run.duration_s}};
    reports::BurninExtra x;
    double tflops = 0, gemms = 0;
    std::vector<std::string> why;
    for (const auto& r : run.ranks) {
      if (r.host != h) continue;
      tflops += r.tflops;
      gemms += static_cast<double>(r.gemms);
      std::vector<std::string> sums;
      for (auto s : r.checksums) sums.push_back(fmt::format("{:016x}", s));
      x.ranks.push_back({r.rank, r.local_rank, r.device, r.gemms, r.tflops, sums});
      for (const auto& p : run.problems)
        if (p.rank == r.rank) {
          x.problems.push_back({r.rank, p.check, p.first_seen_s, p.reason});
          why.push_back(fmt::format("{}: {}", who(r), p.reason));
        }
    }
    res.set_metric("tflops", {tflops, "TFLOP/s", reports::Better::higher, std::nullopt});
    res.set_metric("gemms", {gemms, "count", reports::Better::none, std::nullopt});
    res.set_metric("sdc_mismatches",
                   {static_cast<double>(x.problems.size()), "count", reports::Better::lower, std::nullopt});
    // A node with no mismatch in a run stopped early (a signal, a hang elsewhere) has not passed: the
    // console says NOT FINISHED, and so does its result's verdict; its status stays ok (nothing failed
    // there).
    x.verdict = !why.empty() ? "fail" : run.checks_done() < run.checks_planned ? "not_finished" : "pass";
    reports::write_burnin_extra(res, x);
    if (!why.empty()) res.fail(fmt::format("{}", fmt::join(why, "; ")));
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace fb::workloads
