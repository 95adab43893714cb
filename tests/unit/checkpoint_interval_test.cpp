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

TEST(ExponentialGoodput, ClosedFormCases) {
  // T = M, C → 0, R = 0: T/(M·(e − 1)) = 1/(e − 1); R = M·ln 2 doubles the wall time: 1/(2(e − 1)).
  const double m = 1 * kHour;
  EXPECT_NEAR(exponential_goodput(m, 1e-9, 0, m), 1.0 / (std::exp(1.0) - 1.0), 1e-9);
  EXPECT_NEAR(exponential_goodput(m, 1e-9, m * std::log(2.0), m), 0.5 / (std::exp(1.0) - 1.0), 1e-9);
  // T = 9 min, C = 1 min, M = 10 min, R = 0: 9/(10·(e − 1)).
  EXPECT_NEAR(exponential_goodput(9 * kMin, 1 * kMin, 0, 10 * kMin), 0.9 / (std::exp(1.0) - 1.0), 1e-12);
}

TEST(ExponentialGoodput, TendsToTheCheckpointShareAndToFirstOrder) {
  // No failures: only the checkpoints cost, T/(T + C).
  EXPECT_NEAR(exponential_goodput(30 * kMin, 1 * kMin, 5 * kMin, 1e12), 30.0 / 31.0, 1e-6);
  // With C/T, T/M and R/M all equal to ε the two differ by O(ε²): a hundredth for a tenth of ε.
  const auto gap = [](double eps) {  // T = 1 h, C = ε h, M = 1/ε h, R = 1 h
    const double t = kHour, c = eps * kHour, m = kHour / eps, r = kHour;
    return std::abs(exponential_goodput(t, c, r, m) - first_order_goodput(t, c, r, m));
  };
  EXPECT_LT(gap(0.01), 1e-3);
  EXPECT_NEAR(gap(0.01) / gap(0.001), 100, 2);
}

TEST(ExponentialGoodput, StaysMeaningfulWhereTheFirstOrderFormulaFails) {
  // M = 30 min, R = 9 min, C = 1 min at Daly's interval: first order reads 44%, the complete model 57%
  // (and the cluster simulator agrees with the latter:
  // ClusterSimulator.MatchesDalysExponentialModelAtSmallMtbf).
  const double m = 30 * kMin, c = 1 * kMin, r = 9 * kMin, t = daly_interval(c, m);
  EXPECT_NEAR(t / kMin, 7.094, 0.001);
  EXPECT_NEAR(exponential_goodput(t, c, r, m), 0.5656, 0.0001);
  EXPECT_NEAR(first_order_goodput(t, c, r, m), 0.4408, 0.0001);
  // A restart of twice the MTBF: first order reads 0, the complete model 60/(3600·e²·(e^{90/3600} − 1)).
  EXPECT_EQ(first_order_goodput(60, 30, 7200, 3600), 0.0);
  EXPECT_NEAR(exponential_goodput(60, 30, 7200, 3600), 0.08910, 0.00001);
  // Exponentials that overflow read 0.
  EXPECT_EQ(exponential_goodput(60, 30, 1e7, 1), 0.0);
}

TEST(ExponentialGoodput, AsynchronousWritesClosedFormCases) {
  // M = 10 min, R = 0, C = 1 min. T = 9 min with a 5-minute write: a cycle needs L1 = 10 min without a
  // failure, a retry L2 = 15 min: 9/(10·e^{1/2}·(e − 1)). T = 5 min with a 9-minute write (each save held
  // back 4 min): L1 = 10 min, L2 = 15 min again, for 5 min of work: 5/(10·e^{1/2}·(e − 1)).
  const double m = 10 * kMin, e1 = std::exp(1.0) - 1.0, half = std::exp(0.5);
  EXPECT_NEAR(exponential_goodput(9 * kMin, 1 * kMin, 0, m, 5 * kMin), 0.9 / (half * e1), 1e-12);
  EXPECT_NEAR(exponential_goodput(5 * kMin, 1 * kMin, 0, m, 9 * kMin), 0.5 / (half * e1), 1e-12);
  // A write of 0 is Daly's formula, to the bit.
  EXPECT_EQ(exponential_goodput(9 * kMin, 1 * kMin, 2 * kMin, m, 0),
            1.0 / (m * std::exp(2 * kMin / m) * std::expm1((9 * kMin + 1 * kMin) / m) / (9 * kMin)));
  // No failures: T/(C + max(T, W)), the saves a long write holds back.
  EXPECT_NEAR(exponential_goodput(30 * kMin, 1 * kMin, 5 * kMin, 1e12, 10 * kMin), 30.0 / 31.0, 1e-6);
  EXPECT_NEAR(exponential_goodput(30 * kMin, 1 * kMin, 5 * kMin, 1e12, 45 * kMin), 30.0 / 46.0, 1e-6);
  // First order: (T / max(T, W))·(1 − C/max(T, W) − (T/2 + min(W, T) + max(0, W − T)/2)/M − R/M). T = 1 h,
  // C = 1 min, M = 100 h, R = 6 min: a 20-minute write costs 20 min more per failure; a 70-minute one makes
  // each cycle 70 min + C (6/7 of it computing) and loses 1 h + 5 min more.
  const double t = kHour, c = kMin, mm = 100 * kHour, r = 6 * kMin;
  EXPECT_NEAR(first_order_goodput(t, c, r, mm, 20 * kMin), 1 - 1.0 / 60 - 50.0 / 6000 - 6.0 / 6000, 1e-12);
  EXPECT_NEAR(first_order_goodput(t, c, r, mm, 70 * kMin),
              (6.0 / 7.0) * (1 - 1.0 / 70 - 95.0 / 6000 - 6.0 / 6000), 1e-12);
  EXPECT_NEAR(first_order_overhead(t, c, r, mm, 70 * kMin), 1.0 / 70 + 95.0 / 6000 + 6.0 / 6000, 1e-12);
  // A write of 0 is Young's first order, to the bit.
  EXPECT_EQ(first_order_goodput(t, c, r, mm, 0), 1.0 - c / t - t / (2.0 * mm) - r / mm);
  // And the two agree to first order in the small terms, as for synchronous saves.
  const auto gap = [](double eps) {  // T = 1 h, C = ε h, W = ε h, M = 1/ε h, R = 1 h
    const double tt = kHour, cc = eps * kHour, w = eps * kHour, m2 = kHour / eps, rr = kHour;
    return std::abs(exponential_goodput(tt, cc, rr, m2, w) - first_order_goodput(tt, cc, rr, m2, w));
  };
  EXPECT_NEAR(gap(0.01) / gap(0.001), 100, 2);
  EXPECT_THROW(exponential_goodput(60, 60, 0, 3600, -1), Error);
  EXPECT_THROW(first_order_goodput(60, 60, 0, 3600, std::nan("")), Error);
}

TEST(ExponentialGoodput, DalysIntervalIsItsOptimum) {
  // Daly derived his interval from this model: it lies within a fraction of a percent of the numerical
  // maximum (R scales the goodput, never moves the optimum).
  for (const double m : {24 * kHour, 6 * kHour, 15 * kMin}) {
    const double c = 5 * kMin, daly = daly_interval(c, m);
    double best_t = 0, best = 0;
    for (double t = daly / 3; t < daly * 3; t *= 1.0001)
      if (const double g = exponential_goodput(t, c, 10 * kMin, m); g > best) best = g, best_t = t;
    EXPECT_NEAR(best_t / daly, 1.0, 0.01) << m;
    EXPECT_NEAR(exponential_goodput(daly, c, 10 * kMin, m) / best, 1.0, 1e-4) << m;
  }
}

TEST(CheckpointInterval, RejectsNonPositiveArguments) {
  EXPECT_THROW(young_interval(0, 3600), Error);
  EXPECT_THROW(young_interval(60, -1), Error);
  EXPECT_THROW(daly_interval(60, 0), Error);
  EXPECT_THROW(daly_interval(std::nan(""), 3600), Error);
  EXPECT_THROW(first_order_waste(60, -5, 3600), Error);
  EXPECT_THROW(first_order_goodput(0, 60, 0, 3600), Error);
  EXPECT_THROW(exponential_goodput(60, 60, -1, 3600), Error);
  EXPECT_THROW(exponential_goodput(60, 60, 0, 0), Error);
}

}  // namespace
}  // namespace fb::resilience
