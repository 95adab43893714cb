#pragma once
// The options of `factorybench train`, declared once so that `resilience` (which runs the same training
// under faults) parses them identically, and written back to argv by one serializer for its relaunches.
// Defined in tools/train_command.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/backend.hpp"
#include "kernels/attention_engine.hpp"
#include "workloads/model_flops.hpp"
#include "workloads/train_step.hpp"

namespace fb::tools {

struct TrainCliOptions {
  std::string model = "tiny-dense";
  std::int64_t tp = 1, dp = 0, ep = 1, pp = 1;  // dp 0 = world / (tp · pp)
  std::int64_t seq = 0, micro_batch = 1, grad_accum = 1, layers = 0;
  std::int64_t steps = 10, bucket_layers = 1;
  std::optional<std::int64_t> warmup_steps;  // unset: 2, or --steps - 1 when that is fewer
  std::string dtype;                         // empty = bf16 on cuda, fp32 on host
  workloads::Recompute recompute = workloads::Recompute::none;
  workloads::AttentionFlops attention_flops = workloads::AttentionFlops::causal;
  kernels::AttentionEngineChoice attention_engine = kernels::AttentionEngineChoice::automatic;
  double routing_skew = 0, learning_rate = 1e-4;
  bool sequence_parallel = false, distributed_optimizer = false, overlap = false;
  bool operator==(const TrainCliOptions&) const = default;
};

// Adds the training options to `sub` (everything but --dry-run).
void add_train_options(CLI::App& sub, TrainCliOptions& options);

// The options back as arguments that add_train_options parses to the same values (those at their default
// are left out), for a relaunched job. Every option add_train_options registers must be written here
// (tests/unit/train_options_argv_test.cpp enumerates them).
std::vector<std::string> train_options_argv(const TrainCliOptions& options);

// --tp, --pp, --dp, --ep and --seq in range (each at most 2^24, and so the ranks of the layout); usage
// Errors.
void check_layout_degrees(const TrainCliOptions& cli);
// The workload options for a world of `world_size` ranks on `backend`; throws usage Errors naming the option.
workloads::TrainOptions make_train_options(const TrainCliOptions& cli, BackendKind backend,
                                           std::int64_t world_size, std::uint64_t seed);

}  // namespace fb::tools
