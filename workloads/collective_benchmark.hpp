#pragma once
// The collective benchmark with nccl-tests semantics: a size sweep of one or more collectives, timed per
// iteration after a warm-up, the times reduced across ranks like nccl-tests `-a`, algbw/busbw from the
// table in collective_bandwidth.hpp, an exact --check, and MoE dispatch/combine traffic for alltoallv.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/backend.hpp"
#include "core/communicator.hpp"
#include "core/mpi_context.hpp"
#include "core/telemetry_sampler.hpp"
#include "reports/report.hpp"
#include "workloads/collective_bandwidth.hpp"
#include "workloads/moe_dispatch_traffic.hpp"

namespace fb::workloads {

// How per-rank times become one time (nccl-tests -a): rank 0's, the mean, the minimum or the maximum.
enum class TimeAverage { rank0 = 0, mean = 1, min = 2, max = 3 };

struct CollectiveOptions {
  std::vector<CollectiveOp> ops{CollectiveOp::allreduce};
  DType type = DType::fp32;
  ReduceOp redop = ReduceOp::sum;
  int root = 0;
  std::uint64_t min_bytes = 32 * 1024 * 1024;
  std::uint64_t max_bytes = 32 * 1024 * 1024;
  std::uint64_t factor = 2;
  std::uint64_t step = 0;  // > 0: sizes grow by this many bytes (-i) instead of ×factor
  int iters = 20;
  int warmup = 5;
  TimeAverage average = TimeAverage::mean;
  bool inplace = false;  // also measure in place
  bool check = false;
  std::optional<double> min_busbw_gbps;
  int split = 0;                  // > 0: run inside groups of this many consecutive ranks
  std::optional<MoeRouting> moe;  // alltoallv dispatch/combine traffic instead of a size sweep
  std::uint64_t seed = 42;
  // When set, each result gets the telemetry of its own size's window (extra.telemetry), not the run's.
  TelemetrySampler* telemetry = nullptr;
  // Called once every input check has passed (the free-memory one included), before the first allocation,
  // with the engine that will measure ("nccl", "mpi"): where a warning about the run and the console's first
  // line go, so that a refused input still gets its one line alone.
  std::function<void(std::string_view engine)> on_checked;
  // On rank 0, each size's result as soon as it is made (a hang's report keeps those before it).
  std::function<void(const reports::Result&)> on_result;
};

// Checks everything that needs no communication (sizes, counts, root, split, MoE); usage Errors name the
// option. Identical on every rank, so every rank stops alike.
void validate_collective_options(const CollectiveOptions& options, int world_size);

// FACTORYBENCH_INJECT's wrong@rank=R,check=N against the checks these options make (one per case run with
// --check): a usage Error when N is past them, which would test nothing. Needs no communication, so a
// suite's preflight finds it before its first step runs.
void check_wrong_injection_fits(const CollectiveOptions& options, int world_size);

struct CollectiveRun {
  // On world rank 0: one result per (op, size, placement, group), then one `avg_busbw` result per group
  // (failed under --min-busbw). Empty on the other ranks.
  std::vector<reports::Result> results;
  nlohmann::json summary = nlohmann::json::object();
};

// Collective over the world. Errors before any allocation when the largest size cannot fit in the free
// memory of every rank.
CollectiveRun run_collective_benchmark(const CollectiveOptions& options, MpiContext& mpi, Backend& backend);

}  // namespace fb::workloads
