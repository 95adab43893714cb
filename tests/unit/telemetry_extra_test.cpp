// A result's telemetry (reports/telemetry_extra.cpp): the combined summary with the mode, and the window's
// bounds the HTML timeline reads (absent or not numbers: no window).
#include <gtest/gtest.h>

#include "reports/telemetry_extra.hpp"

namespace fb::reports {
namespace {

TEST(TelemetryExtra, WritesTheSummaryWithItsModeAndReadsTheWindow) {
  Result r;
  EXPECT_FALSE(has_telemetry_extra(r));
  EXPECT_FALSE(find_telemetry_window(r));
  write_telemetry_extra(
      r, {{{"from_s", 0.5}, {"to_s", 2.0}, {"gpu", {{"temperature_c", {{"max", 61}}}}}}, "summary"});
  EXPECT_TRUE(has_telemetry_extra(r));
  EXPECT_EQ(r.extra["telemetry"], nlohmann::json({{"from_s", 0.5},
                                                  {"to_s", 2.0},
                                                  {"gpu", {{"temperature_c", {{"max", 61}}}}},
                                                  {"mode", "summary"}}));
  EXPECT_EQ(find_telemetry_window(r), (TelemetryWindow{0.5, 2.0}));
  r.extra["telemetry"].erase("to_s");
  EXPECT_FALSE(find_telemetry_window(r));
}

}  // namespace
}  // namespace fb::reports
