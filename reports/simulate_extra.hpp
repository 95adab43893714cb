#pragma once
// The extra of a "simulate" Result (resilience/simulation_result.cpp writes it, reports/simulate_console.cpp
// reads it): the spread over trials of goodput, ETTR, failures and wall time, the mean productive time,
// the badput by part (seconds and % of the wall time), the failures by category, the drained nodes and,
// with --checkpoint-interval search, the intervals tried.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct SimulatePercentiles {
  double p5 = 0, p50 = 0, p95 = 0, mean = 0;
  bool operator==(const SimulatePercentiles&) const = default;
};

struct SimulateExtra {
  // extra.percentiles
  SimulatePercentiles goodput_pct, ettr, failures_mean, wall_h;
  double productive_s = 0;                   // mean per trial
  std::map<std::string, double> badput_s;    // by part (the simulator's kTimeSplitNames, productive aside)
  std::map<std::string, double> badput_pct;  // of the mean wall time
  std::map<std::string, double> failures_by_category;  // mean per trial, by failure-model category
  double drained_nodes_mean = 0;
  std::vector<std::pair<double, double>>
      interval_search;  // (interval_s, goodput_pct); written when not empty
  bool operator==(const SimulateExtra&) const = default;
};

void write_simulate_extra(Result& r, const SimulateExtra& extra);
// Throws an input Error naming the result and the missing or mistyped key.
SimulateExtra read_simulate_extra(const Result& r);

}  // namespace fb::reports
