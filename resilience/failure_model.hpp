#pragma once
// Failure models as data (configs/failure-models/*.json): failure rates by category, each per GPU-hour,
// per node-hour or per job-hour, from published fleet data. The simulator turns a model and an allocation
// (GPUs, GPUs per node) into Poisson arrival rates.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::resilience {

// What a rate is counted per. gpu and node rates scale with the allocation; a job rate does not.
enum class FailureScope { gpu, node, job };
std::string_view to_string(FailureScope scope);

// The known categories, one table: which node a failure is charged to and whether that node must leave the
// job (swap for a spare) or can be restarted in place.
struct CategoryTraits {
  std::string_view name;
  bool node_attributed;    // lands on one node: counts toward draining it; flaky nodes see more of it
  bool needs_replacement;  // the node leaves the job until repaired (needs a spare); else restart in place
  std::string_view description;
};
std::span<const CategoryTraits> known_failure_categories();
const CategoryTraits* find_failure_category(std::string_view name);

struct FailureCategory {
  std::string name;
  FailureScope scope = FailureScope::gpu;
  double rate_per_hour = 0;  // events per GPU-hour, node-hour or job-hour (by scope)
  CategoryTraits traits{};
};

struct FailureModel {
  std::string name;  // "llama3-h100"
  std::string file;  // where it was read from ("" for --job-mtbf)
  std::string description;
  std::string source;  // how the rates were derived
  int gpus_per_node =
      8;  // node size of the fleet the rates were measured on (the default for --gpus-per-node)
  std::vector<FailureCategory> categories;
};

// Parses a model; errors name `source` and the JSON path: "FILE: $.categories.gpu.rate_per_hour: must be >
// 0".
FailureModel parse_failure_model(const nlohmann::json& j, const std::string& source);
// A preset name under configs/failure-models/ or a path to a JSON file.
FailureModel load_failure_model(std::string_view name_or_path);
// One job-scope category with rate 1/MTBF (the --job-mtbf model).
FailureModel single_rate_model(double job_mtbf_s);

// Arrival rates of one allocation, per hour of wall time.
struct AllocationRates {
  std::vector<double> per_category_h;     // the whole allocation, by category (same order as the model)
  double node_attributed_per_node_h = 0;  // sum of node-attributed categories, one node
  double job_level_h = 0;                 // sum of categories charged to no node, the whole allocation
  double total_h = 0;                     // everything: 1 / job MTBF
};
// `gpus` must be a multiple of `gpus_per_node` (callers validate).
AllocationRates allocation_rates(const FailureModel& model, std::int64_t gpus, int gpus_per_node);
// Job MTBF in seconds: 1 / total rate. Meta RSC-1 (6.50 per 1,000 node-days, 8 GPUs/node) at 16,384 GPUs: 1.8
// h.
double job_mtbf_s(const FailureModel& model, std::int64_t gpus, int gpus_per_node);

}  // namespace fb::resilience
