// The HTML report's simulate charts (reports/simulate_charts.hpp): goodput against GPUs with the spread and
// the two closed forms, one line per policy, goodput against the interval (a sweep, or auto's search with the
// chosen points unjoined), the badput bars in the simulator's order, and what a hand-edited result leaves
// out.
#include "reports/simulate_charts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "reports/report_printers.hpp"
#include "reports/simulate_extra.hpp"
#include "resilience/cluster_simulator.hpp"

namespace fb::reports {
namespace {

// A simulate result as simulation_result writes it: name MODEL/NgpusPOLICY, params.gpus, the metrics the
// charts read, and the extra (p5/p95 of goodput 1 point around the mean, badput parts summing to the rest).
Result sim(const std::string& model, std::int64_t gpus, const std::string& policy, double interval_s,
           double goodput, std::vector<std::pair<double, double>> search = {}) {
  Result r;
  r.benchmark = "simulate";
  r.name = model + "/" + std::to_string(gpus) + "gpus/" + policy;
  r.params = {{"gpus", gpus}, {"interval_s", interval_s}};
  r.set_metric("goodput_pct", {goodput, "%", Better::higher, std::nullopt});
  r.set_metric("interval_s", {interval_s, "s", Better::none, std::nullopt});
  r.set_metric("analytic_goodput_pct", {goodput - 2, "%", Better::higher, std::nullopt});
  r.set_metric("exponential_goodput_pct", {goodput - 0.1, "%", Better::higher, std::nullopt});
  SimulateExtra x;
  x.goodput_pct = {goodput - 1, goodput, goodput + 1, goodput};
  const double bad = 100 - goodput;
  x.badput_pct = {{"checkpoint", bad / 2}, {"redone", bad / 4}, {"relaunch", bad / 4}, {"detection", 0},
                  {"restore", 0},          {"spare_wait", 0},   {"straggler", 0}};
  x.interval_search = std::move(search);
  write_simulate_extra(r, x);
  return r;
}

std::vector<const Result*> pointers(const std::vector<Result>& results) {
  std::vector<const Result*> out;
  for (const auto& r : results) out.push_back(&r);
  return out;
}

std::vector<std::string> ids(const std::vector<SimulateChart>& charts) {
  std::vector<std::string> out;
  for (const auto& c : charts) out.push_back(c.id);
  return out;
}

const svg::Series& series(const svg::LineChart& chart, const std::string& name) {
  const auto it = std::find_if(chart.series.begin(), chart.series.end(),
                               [&](const svg::Series& s) { return s.name == name; });
  if (it == chart.series.end()) throw std::runtime_error("no series " + name);
  return *it;
}

TEST(SimulateCharts, AGpuSweepDrawsTheSpreadAndBothClosedForms) {
  const std::vector<Result> results{sim("llama3-h100", 1024, "daly", 4400, 97),
                                    sim("llama3-h100", 16384, "daly", 1100, 85.75),
                                    sim("llama3-h100", 131072, "daly", 370, 49.94)};
  const auto charts = simulate_charts(pointers(results), "");
  ASSERT_EQ(ids(charts), (std::vector<std::string>{"simulate-scale", "simulate-badput"}));
  const auto& scale = std::get<svg::LineChart>(charts[0].chart);
  EXPECT_EQ(scale.x_axis, svg::XAxis::log2_count);
  ASSERT_EQ(scale.series.size(), 5u);
  const auto& mean = series(scale, "simulated (mean over trials)");
  EXPECT_FALSE(mean.dashed);
  ASSERT_EQ(mean.points.size(), 3u);
  EXPECT_EQ(mean.points[2].x, 131072);
  EXPECT_EQ(mean.points[2].y, 49.94);
  EXPECT_EQ(series(scale, "p5 over trials").points[1].y, 84.75);
  EXPECT_EQ(series(scale, "p95 over trials").points[1].y, 86.75);
  EXPECT_TRUE(series(scale, "p95 over trials").dashed);
  EXPECT_EQ(series(scale, "Daly's exponential model").points[0].y, 96.9);
  EXPECT_EQ(series(scale, "first order (Young)").points[0].y, 95);
  EXPECT_NE(charts[0].caption.find("llama3-h100/daly"), std::string::npos) << charts[0].caption;
}

TEST(SimulateCharts, TwoPoliciesMakeOneLineEach) {
  const std::vector<Result> results{sim("m", 1024, "daly", 4400, 97), sim("m", 1024, "fixed-1800s", 1800, 96),
                                    sim("m", 8192, "daly", 1500, 90),
                                    sim("m", 8192, "fixed-1800s", 1800, 89)};
  const auto charts = simulate_charts(pointers(results), "run-b");
  ASSERT_EQ(ids(charts), (std::vector<std::string>{"run-b-simulate-scale", "run-b-simulate-badput"}));
  const auto& scale = std::get<svg::LineChart>(charts[0].chart);
  EXPECT_EQ(scale.title, "run-b: Goodput against the job's GPU count");
  ASSERT_EQ(scale.series.size(), 2u);
  EXPECT_EQ(scale.series[0].name, "daly");
  EXPECT_EQ(scale.series[1].name, "fixed-1800s");
  EXPECT_EQ(scale.series[1].points[1].y, 89);
}

TEST(SimulateCharts, AnIntervalSweepIsDrawnInMinutes) {
  std::vector<Result> results;
  for (const double minutes : {5.0, 20.0, 60.0})
    results.push_back(sim("job-mtbf", 4096, "fixed-" + std::to_string(int(minutes * 60)) + "s", minutes * 60,
                          80 - std::abs(minutes - 20) / 4));
  const auto charts = simulate_charts(pointers(results), "");
  ASSERT_EQ(ids(charts), (std::vector<std::string>{"simulate-interval", "simulate-badput"}));
  const auto& chart = std::get<svg::LineChart>(charts[0].chart);
  EXPECT_EQ(chart.x_axis, svg::XAxis::linear);
  const auto& mean = series(chart, "simulated (mean over trials)");
  ASSERT_EQ(mean.points.size(), 3u);
  EXPECT_EQ(mean.points[0].x, 5);
  EXPECT_EQ(mean.points[2].x, 60);
  EXPECT_EQ(mean.points[1].y, 80);
  EXPECT_NE(charts[0].caption.find("job-mtbf at 4096 GPUs"), std::string::npos) << charts[0].caption;
}

TEST(SimulateCharts, AutoSearchesAreLinesAndTheChosenIntervalsMarkersOnly) {
  const std::vector<Result> results{
      sim("m", 2048, "auto", 2880, 96, {{1200, 94.5}, {2880, 95.9}, {6000, 95}}),
      sim("m", 16384, "auto", 1200, 86, {{300, 81}, {1200, 86.2}, {3000, 84}})};
  const auto charts = simulate_charts(pointers(results), "");
  ASSERT_EQ(ids(charts),
            (std::vector<std::string>{"simulate-scale", "simulate-interval", "simulate-badput"}));
  const auto& chart = std::get<svg::LineChart>(charts[1].chart);
  ASSERT_EQ(chart.series.size(), 3u);
  EXPECT_EQ(chart.series[0].name, "2048gpus, searched");
  EXPECT_EQ(chart.series[0].points[1].x, 48);
  EXPECT_EQ(chart.series[0].points[1].y, 95.9);
  const auto& chosen = series(chart, "chosen interval (the reported run)");
  EXPECT_TRUE(chosen.markers_only);
  ASSERT_EQ(chosen.points.size(), 2u);
  EXPECT_EQ(chosen.points[1].x, 20);
  EXPECT_EQ(chosen.points[1].y, 86);
}

TEST(SimulateCharts, BadputBarsStackInTheSimulatorsOrderAndSumToTheWallTime) {
  const std::vector<Result> results{sim("m", 1024, "daly", 4400, 97)};
  const auto charts = simulate_charts(pointers(results), "");
  ASSERT_EQ(ids(charts), (std::vector<std::string>{"simulate-badput"}));  // one point: no line chart
  const auto& bars = std::get<svg::StackedBarChart>(charts[0].chart);
  std::vector<std::string> parts;
  for (const auto name : resilience::kTimeSplitNames) parts.emplace_back(name);
  EXPECT_EQ(bars.segment_names, parts);
  ASSERT_EQ(bars.values.size(), parts.size());
  double total = 0;
  for (const auto& segment : bars.values) total += segment.at(0);
  EXPECT_DOUBLE_EQ(total, 100);
  EXPECT_EQ(bars.values[0][0], 97);   // productive: the goodput
  EXPECT_EQ(bars.values[1][0], 1.5);  // checkpoint
}

TEST(SimulateCharts, WhatAHandEditedResultLacksStaysOutOfTheCharts) {
  std::vector<Result> results{sim("m", 1024, "daly", 4400, 97), sim("m", 8192, "daly", 1500, 90),
                              sim("m", 16384, "daly", 1100, 85)};
  results[1].extra.erase("percentiles");  // unreadable extra: no spread, no bar
  results[2].params.erase("gpus");        // no size: not drawn at all
  const auto charts = simulate_charts(pointers(results), "");
  ASSERT_EQ(ids(charts), (std::vector<std::string>{"simulate-scale", "simulate-badput"}));
  const auto& scale = std::get<svg::LineChart>(charts[0].chart);
  EXPECT_EQ(series(scale, "simulated (mean over trials)").points.size(), 2u);
  EXPECT_EQ(series(scale, "p5 over trials").points.size(), 1u);
  EXPECT_EQ(std::get<svg::StackedBarChart>(charts[1].chart).categories.size(), 1u);
  Result other;
  other.benchmark = "gemm";
  EXPECT_TRUE(simulate_charts({&other}, "").empty());
}

TEST(SimulateCharts, TheHtmlReportDrawsThem) {
  Report rep;
  rep.run = {{"id", "sim"}, {"command", "factorybench simulate --sweep-gpus 1024,16384"}};
  rep.results = {sim("m", 1024, "daly", 4400, 97), sim("m", 16384, "daly", 1100, 85.75)};
  const std::string html = render_html({{"sim.json", rep}});
  EXPECT_NE(html.find("id=\"simulate-scale\""), std::string::npos);
  EXPECT_NE(html.find("id=\"simulate-badput\""), std::string::npos);
  EXPECT_NE(html.find("stroke-dasharray"), std::string::npos);  // the spread and the closed forms
  EXPECT_NE(html.find("<title>simulated (mean over trials): 16384 → 85.75</title>"), std::string::npos)
      << "the point's tooltip names the exact GPU count";
  EXPECT_NE(html.find(">16K</text>"), std::string::npos);  // the axis names powers of two as sizes
  // Two reports of one name: labelled "#1 sim" and "#2 sim", and their charts' ids are slugs of those.
  const std::string two = render_html({{"sim.json", rep}, {"sim.json", rep}});
  EXPECT_NE(two.find("id=\"-1-sim-simulate-scale\""), std::string::npos);
  EXPECT_NE(two.find("id=\"-2-sim-simulate-scale\""), std::string::npos) << "ids are slugs";
  EXPECT_EQ(two.find("id=\"#2"), std::string::npos);
}

}  // namespace
}  // namespace fb::reports
