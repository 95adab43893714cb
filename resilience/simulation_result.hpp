#pragma once
// The Results of `factorybench simulate`: one per scenario (a GPU count and how the checkpoint interval is
// chosen), with the options that shaped it as params, goodput, ETTR, failures and the job MTBF as metrics,
// and percentiles, badput by part, failures by category and the interval search in `extra`; and the report
// summary of the first scenario. The console view reads these only (reports/simulate_console.cpp).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "resilience/cluster_simulator.hpp"
#include "resilience/failure_model.hpp"

namespace fb::resilience {

// Where each recovery cost came from ("option", "calibrate (METRIC)" or "default"), recorded in params.
struct CostSources {
  std::string checkpoint = "default", commit = "default", detection = "default", relaunch = "default",
              restore = "default";
};

// One scenario: the GPU count and the interval policy (fixed_s with IntervalPolicy::fixed).
struct SimulationCase {
  std::int64_t gpus = 0;
  IntervalPolicy policy = IntervalPolicy::daly;
  std::optional<double> fixed_s;
};

// The progress callback for one simulate() call of `trials` trials costing `trial_events` each; `label`
// names the call ("1024 GPUs, interval search"). Empty: no progress.
using CaseProgress = std::function<TrialProgress(std::string label, int trials, double trial_events)>;

// Chooses the interval, runs `trials` trials of the case on `base` with the case's GPU count, and returns
// its Result. Throws a usage Error for a configuration `validate` refuses.
reports::Result simulation_result(const FailureModel& model, const ClusterConfig& base,
                                  const SimulationCase& c, int trials, std::uint64_t seed,
                                  const CostSources& sources, const CaseProgress& progress = {});

// The first result's goodput and badput, the failure model, and `calibration` (the --calibrate source and
// what it lacked) when not null.
nlohmann::json simulation_summary(const FailureModel& model, const std::vector<reports::Result>& results,
                                  const nlohmann::json& calibration);

}  // namespace fb::resilience
