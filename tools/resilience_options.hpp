#pragma once
// The resilience options of `factorybench train` (--run-dir, --checkpoint-every, --faults, ...) and the hooks
// they create. Defined in tools/resilience_command.cpp; `resilience` forwards the same options to train.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/mpi_context.hpp"
#include "resilience/train_resilience_hooks.hpp"
#include "workloads/train_step.hpp"

namespace fb::tools {

// Adds --run-dir, --checkpoint-every, --checkpoint-interval, --mtbf, --keep, --state-bytes,
// --async-checkpoint,
// --resume, --faults, --hang-timeout, --straggler-threshold, --check-every to `sub`.
void add_resilience_options(CLI::App& sub, resilience::ResilienceOptions& options,
                            std::string& state_bytes_text, std::string& mtbf_text);

// The options back as arguments that add_resilience_options parses to the same values (those at their
// default are left out; mtbf_s, state_bytes and seed come from the texts and --seed), for a relaunched job.
std::vector<std::string> resilience_options_argv(const resilience::ResilienceOptions& options,
                                                 const std::string& state_bytes_text,
                                                 const std::string& mtbf_text);

// The resilience options of a train run with a --run-dir as report params (run_dir, checkpoint_every,
// checkpoint_interval, keep, state_bytes, async_checkpoint, resume, faults, hang_timeout,
// straggler_threshold, check_every, mtbf_s); an empty object without a run dir, where none acts.
nlohmann::json resilience_params(const resilience::ResilienceOptions& options);

// A train run's resilience options with the texts parsed, and its fault plan against `world` ranks,
// validated (a bad --faults, a checkpoint option without --run-dir, an SDC plan no replica can vote on):
// touches nothing, so a bad one leaves nothing behind.
struct TrainResilience {
  resilience::ResilienceOptions options;
  resilience::FaultPlan plan;
};
// -o naming a file the job keeps in --run-dir (its event log, a checkpoint's manifest): refused (usage
// Error).
void check_output_outside_run_dir(const std::string& output, const std::string& run_dir);
TrainResilience check_train_resilience(resilience::ResilienceOptions options,
                                       const std::string& state_bytes_text, const std::string& mtbf_text,
                                       int world, int ranks_on_host, const workloads::TrainOptions& train,
                                       std::uint64_t seed);
// A warning for each fault planned at a step beyond `steps` (it would never fire: a run that passes
// without the fault asked for). Call once validation is over.
void warn_unreachable_faults(const resilience::FaultPlan& plan, std::int64_t steps);
// A warning (rank 0) when --checkpoint-every is beyond the steps: the run saves nothing.
void warn_unreachable_checkpoints(const resilience::ResilienceOptions& o, std::int64_t steps);
// The hooks for a train run (null when --run-dir is not given).
// `model` (its name and file digest) is recorded, with the layout, as what the checkpoints hold.
std::unique_ptr<workloads::TrainHooks> make_train_hooks(TrainResilience checked, MpiContext& mpi,
                                                        const workloads::TrainOptions& train,
                                                        const workloads::ModelConfig& model);

}  // namespace fb::tools
