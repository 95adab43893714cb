// The typed extra of a "simulate" Result (reports/simulate_extra.cpp): round trip through the report's JSON,
// the interval search written only when there was one, a non-finite figure read back as NaN, a missing key.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "reports/report_json.hpp"
#include "reports/simulate_extra.hpp"
#include "tests/unit/report_round_trip.hpp"

namespace fb::reports {
namespace {

using testing::through_json;

SimulateExtra sample() {
  SimulateExtra x;
  x.goodput_pct = {80, 85, 90, 85.5};
  x.ettr = {0.8, 0.85, 0.9, 0.855};
  x.failures_mean = {2, 3, 5, 3.25};
  x.wall_h = {167, 168, 169, 168};
  x.productive_s = 5e5;
  x.badput_s = {{"ckpt_save", 100}, {"wasted", 250.5}};
  x.badput_pct = {{"ckpt_save", 0.02}, {"wasted", 0.05}};
  x.failures_by_category = {{"faulty_gpu", 1.5}};
  x.drained_nodes_mean = 0.25;
  x.interval_search = {{600, 84.5}, {1200, 85.5}};
  return x;
}

TEST(SimulateExtra, RoundTrips) {
  Result r;
  write_simulate_extra(r, sample());
  EXPECT_EQ(r.extra["percentiles"]["wall_h"],
            nlohmann::json({{"p5", 167.0}, {"p50", 168.0}, {"p95", 169.0}, {"mean", 168.0}}));
  EXPECT_EQ(r.extra["interval_search"][1], nlohmann::json({{"interval_s", 1200.0}, {"goodput_pct", 85.5}}));
  EXPECT_EQ(read_simulate_extra(r), sample());
  EXPECT_EQ(read_simulate_extra(through_json(r)), sample());
  auto fixed = sample();
  fixed.interval_search.clear();
  Result f;
  write_simulate_extra(f, fixed);
  EXPECT_FALSE(f.extra.contains("interval_search"));
  EXPECT_EQ(read_simulate_extra(f), fixed);
}

TEST(SimulateExtra, NonFiniteFiguresAndMissingKeys) {
  Result r;
  r.benchmark = "simulate";
  r.name = "m/8gpus/daly";
  auto x = sample();
  x.badput_pct["wasted"] = std::nan("");  // a zero wall time
  write_simulate_extra(r, x);
  EXPECT_TRUE(std::isnan(read_simulate_extra(through_json(r)).badput_pct.at("wasted")));
  r.extra["percentiles"].erase("ettr");
  try {
    read_simulate_extra(r);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "result simulate/m/8gpus/daly: $.extra.percentiles: missing required field \"ettr\"");
  }
}

}  // namespace
}  // namespace fb::reports
