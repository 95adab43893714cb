#pragma once
// The HTML report's charts of `simulate` results (reports/html_printer.cpp renders and places them):
//   goodput against the GPU count of a sweep (log x): the simulated mean with its p5 and p95 over trials, and
//     the two closed forms at the same interval (Daly's exponential model, Young's first order);
//   goodput against the checkpoint interval: a --sweep-interval's results, or the grid that
//     --checkpoint-interval auto searched (its own trials), with the chosen interval's goodput;
//   where the wall time goes: one stacked bar per result, productive and each badput part in % of wall time.
// Pure: a report's simulate results in, chart specifications out.
#include <string>
#include <variant>
#include <vector>

#include "reports/report.hpp"
#include "reports/svg_chart.hpp"

namespace fb::reports {

struct SimulateChart {
  std::string id;  // unique within one report's charts
  std::string caption;
  std::variant<svg::LineChart, svg::StackedBarChart> chart;
};

// Charts of the simulate results of one report (others are ignored); `prefix` goes before each title and id
// (a run's label where several reports are rendered; empty for one). Results whose extra cannot be read
// (a hand-edited report) are left out of the charts that need it.
std::vector<SimulateChart> simulate_charts(const std::vector<const Result*>& results,
                                           const std::string& prefix);

}  // namespace fb::reports
