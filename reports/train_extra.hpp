#pragma once
// The extra of a "train" Result (workloads/train_result.cpp writes it, reports/train_console.cpp and the
// HTML breakdown chart read it): the plan (FLOPs per token, memory estimate, GEMM and collective listings,
// the pipeline schedule) and, after a run, the peak, the per-step breakdown, collective bytes, MoE dispatch
// counts, the GEMM engine, the step range and the step times. The breakdown is generic: its categories
// travel with it (workloads/train/step_breakdown.cpp names them), so readers draw whatever a result carries.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct TrainFlopsPerToken {  // model FLOPs per token by part, and the hardware FLOPs (recompute included)
  double attention_projections = 0, attention_core = 0, mlp_dense = 0, moe_routed = 0, moe_shared = 0,
         mtp_projection = 0, logits = 0, hardware = 0;
  bool operator==(const TrainFlopsPerToken&) const = default;
};

struct TrainMemoryEstimate {  // bytes per rank
  std::uint64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, workspace = 0, total = 0;
  bool operator==(const TrainMemoryEstimate&) const = default;
};

struct TrainPlannedGemm {
  std::string name, pass;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  bool transa = false, transb = false;
  std::int64_t calls_per_layer = 1, layers = 0;
  std::string note;
  bool operator==(const TrainPlannedGemm&) const = default;
};

struct TrainPlannedCollective {
  std::string name, group, op;
  std::int64_t group_size = 1;
  double bytes_per_call = 0, calls_per_step = 0, bytes_per_step = 0;
  std::string note;  // what each call carries where calls of one name differ (gradient buckets); may be empty
  bool operator==(const TrainPlannedCollective&) const = default;
};

struct TrainPipeline {  // with pp > 1
  std::string schedule;
  std::int64_t stages = 0, layers_per_stage = 0, micro_batches = 0;
  double ideal_bubble_fraction = 0;
  std::string note;
  bool operator==(const TrainPipeline&) const = default;
};

struct TrainPeak {
  double tflops = 0;  // 0 when no peak is known for the dtype
  std::string source;
  bool measured = false;
  bool operator==(const TrainPeak&) const = default;
};

// extra.breakdown (seconds per step by category), extra.breakdown_categories (the stacking order for
// printers) and extra.breakdown_note.
struct TrainBreakdown {
  std::vector<std::string> categories;
  std::map<std::string, double> seconds;
  std::string note;
  bool operator==(const TrainBreakdown&) const = default;
};

// What a run measured; a --dry-run plan has none of it.
struct TrainRunExtra {
  TrainPeak peak;
  std::optional<std::string> mfu_note;  // why mfu/hfu are missing
  TrainBreakdown breakdown;
  std::map<std::string, double>
      collective_bytes_per_step;  // the last stage's lowest rank, by collective name
  std::map<std::string, double>
      collective_calls_per_step;  // the same, calls (absent in reports before 2026-12)
  std::int64_t moe_rows_sent = 0, moe_rows_received = 0;  // extra.moe_dispatch
  std::string gemm_engine;
  bool gemm_emulated = false;
  std::int64_t first_step = 1, last_step = 0;
  std::vector<double> step_times_s;
  bool operator==(const TrainRunExtra&) const = default;
};

struct TrainExtra {
  TrainFlopsPerToken flops_per_token;
  TrainMemoryEstimate memory_estimate_bytes;
  std::vector<TrainPlannedGemm> gemms;
  std::vector<TrainPlannedCollective> collectives_plan;
  std::optional<TrainPipeline> pipeline;
  std::optional<TrainRunExtra> run;
  bool operator==(const TrainExtra&) const = default;
};

void write_train_extra(Result& r, const TrainExtra& extra);
// Throws an input Error naming the result and the missing or mistyped key; `run` is read when the result
// has extra.breakdown (a run's result always has, a --dry-run plan never).
TrainExtra read_train_extra(const Result& r);
// The breakdown as the HTML chart reads any report: nullopt without an extra.breakdown object; entries that
// are not numbers and categories that are not strings are left out.
std::optional<TrainBreakdown> find_train_breakdown(const Result& r);

}  // namespace fb::reports
