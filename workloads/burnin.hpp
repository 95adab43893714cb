#pragma once
// `factorybench burnin` (issue 17, docs/locate.md): sustained GEMMs on every rank for a duration, with
// periodic silent-data-corruption checks. Every rank multiplies the same seeded matrices, so at each check
// the checksum of C must equal (1) the rank's own first checksum (repeats on one device) and (2) the
// checksum of the other ranks with the same device model (the majority). A rank that disagrees is named,
// with the time the problem was first seen; ranks are grouped into a verdict per node.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "kernels/gemm_engine.hpp"
#include "reports/report.hpp"

namespace fb::workloads {

class BurninSoFar;

struct BurninOptions {
  double duration_s = 60;
  double check_interval_s = 0;  // 0 = a tenth of the duration
  std::int64_t size = 0;        // m = n = k; 0 = 8192 on cuda, 256 on host
  std::uint64_t seed = 42;
  // Where the run as checked so far is kept after every check (every rank), for a reader on another thread:
  // a burn-in of hours cut by a time limit keeps its verdicts so far. Optional.
  std::shared_ptr<BurninSoFar> so_far;
  // Called on every rank after each check is in `so_far` (the command keeps its report so far). Optional.
  std::function<void()> on_check;
};

// The interval between checks (the option, or a tenth of the duration) and the number of checks after the
// reference check 0: the duration over the interval, rounded up, at least 1. Pure; a double, so a caller can
// bound an absurd count before it is converted.
double burnin_check_interval_s(const BurninOptions& o);
double burnin_check_count(const BurninOptions& o);

// One rank's checksums at checks 0..N (check 0 is the reference taken before the sustained load).
struct RankChecks {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  std::string device;  // the device model: checksums are compared within one model
  std::vector<std::uint64_t> checksums;
  std::vector<double> at_s;  // when each check ran (seconds since start)
  std::int64_t gemms = 0;
  double tflops = 0;  // sustained throughput over the run
};

struct BurninProblem {
  int rank = 0;
  int check = 0;
  double first_seen_s = 0;
  std::string reason;
};

// The SDC verdict over all ranks' checks: repeats that differ from the rank's first checksum, and
// checksums that differ from the majority of ranks of the same device model. Pure.
std::vector<BurninProblem> judge_burnin(const std::vector<RankChecks>& ranks);
// The same verdict for check `c` alone, appended to `out`; a rank in `reported` (its first problem already
// found) is not judged again, and one found now is added to it. judge_burnin is this over c = 0, 1, ...:
// a check's verdict depends on that check's checksums and check 0 only, so a run judges each check once,
// as it is gathered.
void judge_burnin_check(const std::vector<RankChecks>& ranks, std::size_t c, std::set<int>& reported,
                        std::vector<BurninProblem>& out);

// The burn-in GEMM engine's options: bits that depend only on the device and the inputs, so that healthy
// peers agree (see burnin.cpp).
kernels::GemmEngineOptions burnin_engine_options(int local_ranks);

// FNV-1a 64 over bytes: the checksum of a GEMM result.
std::uint64_t checksum_bytes(const void* data, std::size_t bytes);

struct BurninRun {
  std::vector<RankChecks> ranks;
  std::vector<BurninProblem> problems;
  double duration_s = 0;  // asked for (--duration)
  double elapsed_s = 0;   // measured: the last check of the slowest rank (a GEMM may run past the duration)
  std::int64_t size = 0;
  int checks_planned = 0;  // after the reference: the run's own checks are ranks[i].checksums.size() - 1
  bool pass() const { return problems.empty(); }
  // Checks gathered from every rank after the reference (check 0); -1 before the reference.
  int checks_done() const {
    return ranks.empty() ? -1 : static_cast<int>(ranks.front().checksums.size()) - 1;
  }
};

// The run as checked so far: run_burnin updates it after every check's gather, under its lock; snapshot()
// copies it for a reader on another thread (an interrupted burn-in's report, tools/burnin_command.cpp).
class BurninSoFar {
 public:
  BurninRun snapshot() const {
    std::lock_guard lock(mutex_);
    return run_;
  }
  template <class Change>
  void update(Change&& change) {
    std::lock_guard lock(mutex_);
    change(run_);
  }

 private:
  mutable std::mutex mutex_;
  BurninRun run_;
};

// Collective over the world. Every rank's checksum is gathered at every check, so every rank holds every
// verdict as soon as its check has run: rank 0 says a mismatch on stderr when it is found, not at the end.
// FACTORYBENCH_INJECT sdc@rank=R,check=N flips one bit of rank R's result as read back at check N. Every
// rank returns the same run.
BurninRun run_burnin(const MpiContext& mpi, Backend& backend, const BurninOptions& o);

// One result per node ("burnin/node/<host>"), failed when a rank of it has a problem.
std::vector<reports::Result> burnin_results(const BurninRun& run);

}  // namespace fb::workloads
