// Known answers from shared/REFERENCES.md: Daly's worked cases (δ = 5 min) and the first-order waste table.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "resilience/checkpoint_interval.hpp"

namespace fb::resilience {
namespace {

constexpr double kMin = 60.0, kHour = 3600.0;

TEST(DalyInterval, WorkedCasesWithFiveMinuteCheckpoint) {
  EXPECT_NEAR(daly_interval(5 * kMin, 24 * kHour) / kMin, 116.7, 0.05);
  EXPECT_NEAR(daly_interval(5 * kMin, 6 * kHour) / kMin, 56.7, 0.05);
  EXPECT_NEAR(daly_interval(5 * kMin, 15 * kMin) / kMin, 9.14, 0.005);
}

TEST(DalyInterval, CheckpointCostAtLeastTwiceMtbfGivesMtbf) {
  EXPECT_DOUBLE_EQ(daly_interval(2 * kHour, 1 * kHour), 1 * kHour);
  EXPECT_DOUBLE_EQ(daly_interval(5 * kHour, 1 * kHour), 1 * kHour);
}

TEST(YoungInterval, SameCasesAsDaly) {
  // √(2·5 min·24 h) = 120 min, √(2·5 min·6 h) = 60 min, √(2·5 min·15 min) = √150 min = 12.247 min.
  EXPECT_NEAR(young_interval(5 * kMin, 24 * kHour) / kMin, 120.0, 1e-9);
  EXPECT_NEAR(young_interval(5 * kMin, 6 * kHour) / kMin, 60.0, 1e-9);
  EXPECT_NEAR(young_interval(5 * kMin, 15 * kMin) / kMin, 12.247, 0.001);
  // Daly's correction shortens the interval; the relative change grows as δ approaches M.
  EXPECT_LT(daly_interval(5 * kMin, 24 * kHour), young_interval(5 * kMin, 24 * kHour));
}

TEST(FirstOrderWaste, ReferenceTableAtMtbf185_6Minutes) {
  const double m = 185.6 * kMin;
  EXPECT_NEAR(young_interval(10, m) / kMin, 7.9, 0.05);
  EXPECT_NEAR(first_order_waste(10, 0, m) * 100, 4.2, 0.05);
  EXPECT_NEAR(young_interval(1 * kMin, m) / kMin, 19.3, 0.05);
  EXPECT_NEAR(first_order_waste(1 * kMin, 0, m) * 100, 10.4, 0.05);
  EXPECT_NEAR(young_interval(5 * kMin, m) / kMin, 43.1, 0.05);
  EXPECT_NEAR(first_order_waste(5 * kMin, 0, m) * 100, 23.2, 0.05);
}

TEST(FirstOrderWaste, RestartCostAddsROverM) {
  const double m = 185.6 * kMin;
  EXPECT_NEAR(first_order_waste(60, 600, m) - first_order_waste(60, 0, m), 600 / m, 1e-12);
}

TEST(FirstOrderGoodput, EqualsOneMinusWasteAtYoungsInterval) {
  const double c = 60, r = 300, m = 24 * kHour;
  const double t = young_interval(c, m);
  EXPECT_NEAR(first_order_goodput(t, c, r, m), 1.0 - first_order_waste(c, r, m), 1e-12);
  // Young's interval maximises the first-order goodput: any other interval does worse.
  EXPECT_LT(first_order_goodput(0.5 * t, c, r, m), first_order_goodput(t, c, r, m));
  EXPECT_LT(first_order_goodput(2.0 * t, c, r, m), first_order_goodput(t, c, r, m));
}

TEST(FirstOrderGoodput, ClampedToZeroWhenCostsExceedMtbf) {
  EXPECT_EQ(first_order_goodput(60, 30, 7200, 3600), 0.0);
}

TEST(CheckpointInterval, RejectsNonPositiveArguments) {
  EXPECT_THROW(young_interval(0, 3600), Error);
  EXPECT_THROW(young_interval(60, -1), Error);
  EXPECT_THROW(daly_interval(60, 0), Error);
  EXPECT_THROW(daly_interval(std::nan(""), 3600), Error);
  EXPECT_THROW(first_order_waste(60, -5, 3600), Error);
  EXPECT_THROW(first_order_goodput(0, 60, 0, 3600), Error);
}

}  // namespace
}  // namespace fb::resilience
