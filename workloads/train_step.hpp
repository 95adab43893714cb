#pragma once
// `factorybench train`: a transformer training step (dense or MoE, GQA or MLA attention) on every rank with
// real GEMMs, attention, MoE routing and the collectives of a tensor/data/expert-parallel layout (optionally
// sequence parallel), pipelined over stages with a 1F1B schedule; Megatron-accurate MFU.
// Measures and returns data; never prints (tools/train_command.cpp prints). Algorithm: docs/train.md.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/mpi_context.hpp"
#include "kernels/attention_engine.hpp"
#include "reports/report.hpp"
#include "workloads/device_peak.hpp"
#include "workloads/model_config.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/train/step_breakdown.hpp"
#include "workloads/train_hooks.hpp"

namespace fb::workloads {

struct TrainOptions {
  std::string model = "tiny-dense";  // preset name or JSON path
  ParallelConfig parallel;
  StepShape shape;                // seq 0 = the model's
  std::int64_t layers = 0;        // 0 = all; otherwise instantiate only this many layers
  std::int64_t steps = 10;        // training steps (1-based numbers for the hooks)
  std::int64_t warmup_steps = 2;  // the first steps of this run, excluded from the statistics
  bool warmup_default = false;    // warmup_steps was not given: a resumed run keeps one measured step
  double routing_skew = 0;        // 0 = uniform expert popularity; s > 0: router bias −s·ln(1 + e)
  bool overlap = false;           // DP gradient reduction overlapped with backward (non-blocking)
  float learning_rate = 1e-4f;
  std::uint64_t seed = 42;
  // How the attention core runs (kernels/attention_engine.hpp): auto takes cuDNN's fused attention where it
  // can (cuda, bf16/fp16, a shape cuDNN supports), else the blocked GEMMs.
  kernels::AttentionEngineChoice attention_engine = kernels::AttentionEngineChoice::automatic;
};

// The model as the run instantiates it (--layers applied) and the validated plan. Throws usage/input Errors
// (unknown model, impossible layout, tokens not divisible by --tp) before anything is allocated; identical on
// every rank.
TrainPlan prepare_training(const TrainOptions& options, std::int64_t world_size);
// Why `kind` cannot train in `dtype` ("--dtype fp16 on the host backend: use fp32 or bf16"; no backend trains
// fp16 or fp8, which --dry-run plans), or empty. Pure: the run checks it with its backend, train before its
// backend starts and resilience before its launch with the --backend given (cuda where it is not host).
std::string train_dtype_unsupported(BackendKind kind, DType dtype);

struct TrainRun {
  TrainPlan plan;
  std::vector<double> step_seconds;                 // measured steps, slowest rank per step
  std::map<std::string, double> breakdown_seconds;  // per step (median over measured steps), this is rank 0
                                                    // (pipeline: the first stage); set at the end
  std::vector<train::CatSeconds> profiled;          // the profiled steps' categories (host: every measured
                                                    // step; cuda: the last warm-up step's)
  std::int64_t steps_run = 0, first_step = 1, last_step = 0;
  std::int64_t warmup_steps = 0;  // as run: the default leaves a resumed run one measured step
  double loss = 0, grad_norm = 0;
  std::uint64_t allocated_bytes = 0;  // what this rank allocated (max over ranks)
  double moe_imbalance = 0;           // max/mean tokens per expert over the run (1 = balanced)
  std::int64_t dispatch_sent_rows = 0, dispatch_received_rows = 0;  // summed over all ranks and steps
  // Per step, by collective name: one rank of the last pipeline stage, the stage the plan lists (rank 0
  // without PP).
  std::map<std::string, double> collective_bytes;
  std::map<std::string, double> collective_calls;          // the same, calls
  std::vector<double> per_rank_steps, per_rank_last_step;  // index = world rank
  std::string gemm_engine;
  bool gemm_emulated = false;
  std::string attention_engine;  // "gemm", "cudnn" or "reference" (agreed by every rank)
};

// Runs the training loop on every rank: builds the model shard, calls `hooks` (may be null) at the points
// workloads/train_hooks.hpp defines, and returns the measurements (identical on every rank where agreed).
TrainRun run_training(const TrainOptions& options, MpiContext& mpi, Backend& backend, TrainHooks* hooks);
// The same with the plan prepare_training(options, mpi.size()) returned: the model loaded and validated once.
// `on_step` (may be empty) is called on every rank after each measured step with the run so far: its steps,
// loss and profiled categories (this rank's; breakdown_seconds and the counters the ranks agree at the end
// are not in it yet), so that a run stopped before its end keeps what it measured. It runs between steps,
// where the other ranks wait for it in the next step's first collective: it must cost O(1) per step, not
// O(steps so far) (tools/train_so_far.hpp appends the step and builds the report only when one is written).
TrainRun run_training(const TrainOptions& options, TrainPlan plan, MpiContext& mpi, Backend& backend,
                      TrainHooks* hooks, const std::function<void(const TrainRun&)>& on_step = {});

// Median seconds per breakdown category over the profiled steps (TrainRun::breakdown_seconds).
std::map<std::string, double> median_breakdown(const std::vector<train::CatSeconds>& profiled);

// The report result for a run (or, with run == nullptr, for a --dry-run plan). `peak` gives MFU.
reports::Result train_result(const TrainOptions& options, const TrainPlan& plan, const TrainRun* run,
                             const DevicePeak& peak, std::int64_t world_size);

}  // namespace fb::workloads
