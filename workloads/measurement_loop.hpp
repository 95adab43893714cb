#pragma once
// The one measurement loop of gemm, collective, health (and fault localization): warm-up, rotating
// buffers, timed iterations with the backend's timer, medians and the per-rank gather. Callers say what
// one iteration does; the loop owns when it is timed.
//
// Iteration i (warm-up and timed alike) works on buffer set i mod `buffers`, so inputs rotate through
// enough sets to leave the last-level cache (nvbench/MAMF practice: a GEMM timed on cache-resident inputs
// overstates what training sees). Each timed iteration has its own Timer, read only after the loop, so on
// cuda the work is issued back to back and only the events bracket it.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "core/statistics.hpp"

namespace fb::workloads {

struct MeasureLoop {
  int warmup = 5;   // untimed iterations first
  int iters = 20;   // timed iterations
  int buffers = 1;  // buffer sets to rotate through (iteration i uses i mod buffers)
  // Called after the warm-up and after the timed iterations. Empty: Backend::synchronize(). Collectives
  // pass their communicator's synchronize (and a barrier before timing, so ranks start together).
  std::function<void()> before_timing;
  std::function<void()> after_timing;
  // Called after every iteration, warm-up and timed (outside the timer), with the iterations done and the
  // total: progress inside one long case (a host GEMM of 4096³ runs seconds an iteration). Keep it cheap.
  std::function<void(int done, int total)> on_iteration;
};

struct Measurement {
  std::vector<double> seconds;  // one per timed iteration, in order
  SampleStats stats;            // of `seconds`
  // Process CPU time over the timed iterations (all threads). On a shared host it counts the work the
  // rank did, not the time it waited for a core, so it compares ranks where wall time cannot.
  double cpu_seconds = 0;
};

// --iters in [1, kMaxIterations] and --warmup in [0, kMaxIterations], or a usage error naming the option: a
// typo (-n 100000000) is refused instead of running for days. A million calls per case is 100 s of 32 MiB
// all-reduces on an H100 node and hours on a host; the median needs far fewer (nccl-tests' default is 20).
inline constexpr long long kMaxIterations = 1'000'000;
void validate_iterations(long long iters, long long warmup);
// What a valid but thin measurement loses, in words, or "": fewer than 3 timed iterations give no spread
// (the median is one or two samples); no warm-up times the first call's start-up (plans, caches, page
// faults) as if it were steady state.
std::string few_samples_warning(long long iters, long long warmup);

// Runs `iteration(buffer)` warmup + iters times and times the last iters of them.
Measurement measure(Backend& backend, const MeasureLoop& loop,
                    const std::function<void(int buffer)>& iteration);

// The fastest timed iteration of the same loop: fault localization judges links and groups by their best
// iteration, since an injected or real slow link is slow every time while a loaded host stalls now and then.
double best_iteration_seconds(Backend& backend, const MeasureLoop& loop,
                              const std::function<void()>& iteration);

// Buffer sets to rotate through: enough that together they exceed `cache_bytes` (at least 2, at most 64),
// fewer when memory is short (never below 1). A fifth of free memory is left to everyone else.
int rotation_sets(std::uint64_t set_bytes, std::uint64_t cache_bytes, std::uint64_t free_bytes);

// Every rank's samples on rank 0, concatenated in rank order (all ranks pass the same count); empty on
// the other ranks. Collective over the world.
std::vector<double> gather_samples(const MpiContext& mpi, std::span<const double> mine);

}  // namespace fb::workloads
