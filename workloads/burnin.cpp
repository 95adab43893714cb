#include "workloads/burnin.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

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

std::vector<BurninProblem> judge_burnin(const std::vector<RankChecks>& ranks) {
  std::vector<BurninProblem> out;
  std::size_t checks = 0;
  for (const auto& r : ranks) checks = std::max(checks, r.checksums.size());
  std::map<int, bool> reported;  // one problem per rank: the first one seen
  for (std::size_t c = 0; c < checks; ++c) {
    // The majority checksum of each device model at this check.
    std::map<std::string, std::map<std::uint64_t, int>> votes;
    for (const auto& r : ranks)
      if (c < r.checksums.size()) ++votes[r.device][r.checksums[c]];
    for (const auto& r : ranks) {
      if (c >= r.checksums.size() || reported[r.rank]) continue;
      const auto& v = votes[r.device];
      const auto majority = std::max_element(
          v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      std::string reason;
      if (c > 0 && r.checksums[c] != r.checksums[0])
        reason = fmt::format("checksum {:016x} at check {} differs from its own first result {:016x}",
                             r.checksums[c], c, r.checksums[0]);
      else if (v.size() > 1 && majority->second * 2 > static_cast<int>(ranks.size()) &&
               r.checksums[c] != majority->first)
        reason = fmt::format("checksum {:016x} at check {} differs from {:016x} of {} other {} rank(s)",
                             r.checksums[c], c, majority->first, majority->second, r.device);
      if (reason.empty()) continue;
      reported[r.rank] = true;
      out.push_back({r.rank, static_cast<int>(c), c < r.at_s.size() ? r.at_s[c] : 0, reason});
    }
  }
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

// This rank's checks: check 0, then sustained GEMMs with check k due at k·interval, k = 1..checks.
RankChecks run_checks(const MpiContext& mpi, Backend& backend, BurninGemm& g, double interval, int checks) {
  const auto& faults = injected_faults();
  RankChecks mine;
  mine.rank = mpi.rank();
  mine.host = mpi.hostname();
  mine.local_rank = mpi.local_rank();
  mine.device = backend.device().name;
  const double t0 = now_s();
  const auto check = [&](int k) {
    ++mine.gemms;
    const bool sdc = faults.sdc_rank == mpi.rank() && faults.sdc_check == static_cast<std::uint64_t>(k);
    mine.checksums.push_back(g.checked_run(sdc));
    mine.at_s.push_back(now_s() - t0);
  };
  check(0);
  // A 20-minute burn-in says it is alive (rank 0, stderr; --quiet silences it).
  ProgressMeter progress("burnin", checks * interval);
  for (int k = 1; k <= checks; ++k) {
    // Sustained load until this check is due, then the check (every rank does the same checks).
    while (now_s() - t0 < k * interval) {
      g.run();
      ++mine.gemms;
      if (mine.gemms % 16 == 0) {
        backend.synchronize();
        progress.update(now_s() - t0, fmt::format("{}/{} checks, {} GEMMs", k - 1, checks, mine.gemms));
      }
    }
    backend.synchronize();
    check(k);
    log::debug("burnin: check {}/{} at {:.1f} s", k, checks, now_s() - t0);
  }
  const double elapsed = now_s() - t0;
  const std::int64_t size = g.p.m;
  mine.tflops = 2.0 * static_cast<double>(size) * size * size * mine.gemms / elapsed / 1e12;
  return mine;
}

// Everyone's checks to everyone: fixed-size numbers, then the strings. `checks` + 1 checks per rank.
std::vector<RankChecks> gather_checks(const MpiContext& mpi, const RankChecks& mine, int checks) {
  const int n = mpi.size();
  const auto per = static_cast<std::size_t>(checks + 1);
  std::vector<double> my_nums(mine.at_s);
  my_nums.push_back(static_cast<double>(mine.gemms));
  my_nums.push_back(mine.tflops);
  my_nums.push_back(mine.local_rank);
  const auto sums = allgather(mpi, std::span<const std::uint64_t>(mine.checksums.data(), per));
  const auto nums = allgather(mpi, std::span<const double>(my_nums));
  char name[128] = {};
  mine.device.copy(name, sizeof(name) - 1);
  const auto names = allgather(mpi, std::span<const char>(name, sizeof(name)));
  std::vector<RankChecks> out;
  for (int r = 0; r < n; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    RankChecks x;
    x.rank = r;
    x.host = mpi.hostnames()[ur];
    x.device = std::string(names.data() + ur * sizeof(name));
    x.checksums.assign(sums.begin() + static_cast<std::ptrdiff_t>(ur * per),
                       sums.begin() + static_cast<std::ptrdiff_t>((ur + 1) * per));
    const double* q = nums.data() + ur * (per + 3);
    x.at_s.assign(q, q + per);
    x.gemms = static_cast<std::int64_t>(q[per]);
    x.tflops = q[per + 1];
    x.local_rank = static_cast<int>(q[per + 2]);
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
  BurninRun run;
  run.duration_s = o.duration_s;
  run.size = o.size > 0 ? o.size : (backend.kind() == BackendKind::cuda ? 8192 : 256);
  const double interval = burnin_check_interval_s(o);
  const int checks = static_cast<int>(burnin_check_count(o));  // bounded by the command (10 million)
  BurninGemm gemm(mpi, backend, run.size, o.seed);
  const RankChecks mine = run_checks(mpi, backend, gemm, interval, checks);
  run.ranks = gather_checks(mpi, mine, checks);
  for (const auto& r : run.ranks)
    if (!r.at_s.empty()) run.elapsed_s = std::max(run.elapsed_s, r.at_s.back());
  run.problems = judge_burnin(run.ranks);
  return run;
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
    x.verdict = why.empty() ? "pass" : "fail";
    reports::write_burnin_extra(res, x);
    if (!why.empty()) res.fail(fmt::format("{}", fmt::join(why, "; ")));
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace fb::workloads
