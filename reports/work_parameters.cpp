#include "reports/work_parameters.hpp"

#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace fb::reports {
namespace {

struct WorkParameters {
  std::string_view benchmark;
  std::vector<std::string_view> keys;
};

// The options each benchmark records in params and leaves out of its result names (resilience/
// simulation_result.cpp, resilience/resilience_result.cpp, workloads/train_result.cpp).
const std::vector<WorkParameters> kWork{
    {"simulate",
     {"days", "work_days", "gpus_per_node", "checkpoint_s", "commit_s", "detection_s", "relaunch_s",
      "restore_s", "spares", "repair_s", "policy", "drain_after", "flaky_share", "flaky_factor",
      "straggler_share", "straggler_factor", "trials", "seed"}},
    {"resilience",
     {"train_options", "faults", "launcher", "steps", "checkpoint_every", "checkpoint_interval",
      "async_checkpoint", "state_bytes", "max_restarts", "spares", "drain_after", "mtbf", "time_budget",
      "preflight"}},
    {"train",
     {"recompute", "attention_flops", "attention_engine", "distributed_optimizer", "overlap", "bucket_layers",
      "routing_skew"}},
};

}  // namespace

WorkDifferences work_differences(const Result& baseline, const Result& candidate, std::size_t limit) {
  WorkDifferences out;
  const auto& b = baseline.params;
  const auto& c = candidate.params;
  if (!b.is_object() || !c.is_object()) return out;
  for (const auto& work : kWork) {
    if (work.benchmark != baseline.benchmark) continue;
    for (const auto key_view : work.keys) {
      const std::string key(key_view);
      // simulate's `days` is the window asked for, or with --work-days the mean time the trials took.
      if (key == "days" && !b.value("work_days", nlohmann::json()).is_null()) continue;
      if (!b.contains(key) || !c.contains(key)) continue;
      // nlohmann's == compares numbers by value (2 == 2.0), 64-bit integers exactly.
      if (b.at(key) == c.at(key)) continue;
      // dump() writes a double in its shortest exact form: 3600.0001 and 3600.0002 stay apart.
      if (++out.count <= limit)
        out.shown += fmt::format("{}{} {} -> {}", out.shown.empty() ? "" : ", ", key, b.at(key).dump(),
                                 c.at(key).dump());
    }
  }
  return out;
}

}  // namespace fb::reports
