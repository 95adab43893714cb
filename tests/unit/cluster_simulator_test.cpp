// Known answers for the cluster simulator (issue 8): the first-order model when M ≫ C, the Llama 3 and
// Meta RSC-1 failure counts and MTBFs, determinism for a seed, and the accounting identity.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "reports/report.hpp"
#include "resilience/checkpoint_interval.hpp"
#include "resilience/cluster_simulator.hpp"
#include "resilience/failure_model.hpp"

namespace fb::resilience {
namespace {

constexpr double kHour = 3600.0, kDay = 86400.0;

ClusterConfig config(std::int64_t gpus, double days) {
  ClusterConfig c;
  c.gpus = gpus;
  c.gpus_per_node = 8;
  c.wall_s = days * kDay;
  return c;
}

TEST(ClusterSimulator, MatchesFirstOrderGoodputWhenMtbfDwarfsCheckpointCost) {
  // M = 24 h, C = 1 min, R = 5 min (detection 1 + relaunch 3 + restore 1), Young's interval.
  const auto model = single_rate_model(24 * kHour);
  auto c = config(1024, 60);
  c.costs = {60, 60, 180, 60};
  const double m = job_mtbf_s(model, c.gpus, c.gpus_per_node);
  ASSERT_DOUBLE_EQ(m, 24 * kHour);
  const double t = young_interval(c.costs.checkpoint_s, m);
  const auto s = simulate(model, c, t, 400, 7);
  const double analytic = 100 * first_order_goodput(t, c.costs.checkpoint_s, c.costs.restart_s(), m);
  EXPECT_NEAR(s.goodput_pct.mean(), analytic, 0.5) << "analytic " << analytic;
  EXPECT_NEAR(s.failures.mean(), 60.0, 60.0 * 0.03);
}

TEST(ClusterSimulator, MatchesDalysExponentialModelAtSmallMtbf) {
  // Failures strike checkpoints and restarts too (a restart starts over), as in Daly 2006's complete model.
  // Where the restart is a large share of the MTBF the first-order formula reads far too low; the simulation
  // and the complete model agree. C = 1 min, R = 9 min (detection 2 + relaunch 5 + restore 2), Daly's
  // interval.
  for (const double m : {2 * kHour, 30 * 60.0, 12 * 60.0}) {
    const auto model = single_rate_model(m);
    auto c = config(1024, 60);
    c.costs = {60, 120, 300, 120};
    const double t = daly_interval(c.costs.checkpoint_s, m);
    const auto s = simulate(model, c, t, 40, 11);
    const double exact = 100 * exponential_goodput(t, c.costs.checkpoint_s, c.costs.restart_s(), m);
    const double first = 100 * first_order_goodput(t, c.costs.checkpoint_s, c.costs.restart_s(), m);
    EXPECT_NEAR(s.goodput_pct.mean(), exact, 0.3) << "M " << m / 60 << " min; first order " << first;
    if (m < kHour) {
      EXPECT_GT(exact - first, 10) << "M " << m / 60 << " min";
    }
  }
}

// One job of 1024 GPUs for 60 days at one failure rate, T = 20 min, costs {C, detection, relaunch, restore},
// a write of W: the simulated mean goodput over `trials`, and the closed forms' (first order, exponential).
struct AsyncCase {
  double simulated, first_order, exponential;
};
AsyncCase async_case(double m, RecoveryCosts costs, double w, int trials, std::uint64_t seed) {
  auto c = config(1024, 60);
  c.costs = costs;
  c.costs.commit_s = w;
  const double t = 1200, r = c.costs.restart_s();
  return {simulate(single_rate_model(m), c, t, trials, seed).goodput_pct.mean(),
          100 * first_order_goodput(t, costs.checkpoint_s, r, m, w),
          100 * exponential_goodput(t, costs.checkpoint_s, r, m, w)};
}

TEST(ClusterSimulator, MatchesTheExponentialModelWithAsynchronousWrites) {
  // The async form of Daly's complete model (resilience/checkpoint_interval.hpp): a cycle needs
  // L1 = C + max(T, W) without a failure, a retry after one L2 = T + C + W. C = 1 min, R = 9 min, T = 20 min;
  // writes of 10 min (W < T) and 50 min (W > T: each save held back 30 min) beside synchronous saves
  // (80.9%, 74.4% and 24.7% modelled at M = 2 h).
  for (const double m : {2 * kHour, 45 * 60.0})
    for (const double w : {0.0, 600.0, 3000.0}) {
      const auto a = async_case(m, {60, 120, 300, 120}, w, 200, 23);
      EXPECT_NEAR(a.simulated, a.exponential, 0.3) << "M " << m / 60 << " min, W " << w << " s";
    }
}

TEST(ClusterSimulator, MatchesFirstOrderGoodputWithAsynchronousWrites) {
  // M = 24 h, C = 10 s, R = 5 min, T = 20 min: a 10-minute write loses 10 min more per failure; one of
  // 20 min 30 s also holds each save back 30 s, one of 30 min 10 min (98.1%, 97.4%, 94.4% and 64.4% to first
  // order).
  for (const double w : {0.0, 600.0, 1230.0, 1800.0}) {
    const auto a = async_case(24 * kHour, {10, 60, 180, 60}, w, 400, 7);
    EXPECT_NEAR(a.simulated, a.first_order, 0.5) << "W " << w;
  }
}

TEST(ClusterSimulator, Llama3At16kGpusFor54DaysGives419Interruptions) {
  const auto model = load_failure_model("llama3-h100");
  const auto c = config(16384, 54);
  EXPECT_NEAR(job_mtbf_s(model, c.gpus, c.gpus_per_node) / kHour, 3.09, 0.005);
  const auto s = simulate(model, c, 30 * 60, 100, 42);
  EXPECT_NEAR(s.failures.mean(), 419, 419 * 0.03);
  EXPECT_NEAR(s.sim_mtbf_s / kHour, 3.09, 3.09 * 0.03);
  // Every category shows up in proportion to its published count: faulty GPUs are 148 of 419.
  double faulty_gpu = 0;
  for (std::size_t i = 0; i < model.categories.size(); ++i)
    if (model.categories[i].name == "faulty_gpu") faulty_gpu = s.mean_failures_by_category[i];
  EXPECT_NEAR(faulty_gpu, 148, 148 * 0.06);
}

TEST(ClusterSimulator, MetaRsc1ProjectedJobMttf) {
  const auto model = load_failure_model("meta-rsc1-a100");
  EXPECT_NEAR(job_mtbf_s(model, 16384, 8) / kHour, 1.8, 0.01);
  EXPECT_NEAR(job_mtbf_s(model, 131072, 8) / kHour, 0.23, 0.005);
  const auto s16 = simulate(model, config(16384, 30), 20 * 60, 40, 3);
  EXPECT_NEAR(s16.sim_mtbf_s / kHour, 1.8, 1.8 * 0.03);
  const auto s131 = simulate(model, config(131072, 7), 5 * 60, 40, 3);
  EXPECT_NEAR(s131.sim_mtbf_s / kHour, 0.225, 0.225 * 0.03);
}

TEST(ClusterSimulator, SameSeedSameResultDifferentSeedDifferentSamples) {
  const auto model = load_failure_model("llama3-h100");
  auto c = config(8192, 10);
  c.flaky_share = 0.02;
  c.flaky_factor = 10;
  c.straggler_share = 0.001;
  c.straggler_factor = 1.2;
  c.drain = DrainPolicy::drain;
  c.spares = 16;
  const auto a = simulate(model, c, 1800, 20, 1234);
  const auto b = simulate(model, c, 1800, 20, 1234);
  const auto d = simulate(model, c, 1800, 20, 1235);
  EXPECT_EQ(a.goodput_pct.mean(), b.goodput_pct.mean());
  EXPECT_EQ(a.failures_total, b.failures_total);
  EXPECT_EQ(a.mean_split.redone, b.mean_split.redone);
  EXPECT_NE(a.goodput_pct.mean(), d.goodput_pct.mean());
  EXPECT_NE(a.failures_total, d.failures_total);
  const auto t1 = simulate_trial(model, c, 1800, 99), t2 = simulate_trial(model, c, 1800, 100);
  EXPECT_NE(t1.failures, t2.failures);
}

TEST(ClusterSimulator, WallTimeSplitsIntoItsParts) {
  const auto model = load_failure_model("llama3-h100");
  auto c = config(16384, 20);
  c.spares = 4;
  c.repair_s = 12 * kHour;
  c.straggler_share = 0.002;
  c.straggler_factor = 1.5;
  c.drain = DrainPolicy::drain;
  for (std::uint64_t seed : {1, 2, 3}) {
    const auto o = simulate_trial(model, c, 1200, seed);
    EXPECT_NEAR(o.split.total(), c.wall_s, 1e-6 * c.wall_s);
    for (double part : as_array(o.split)) EXPECT_GE(part, 0);
    EXPECT_GT(o.split.checkpoint, 0);
    EXPECT_GT(o.split.redone, 0);
    EXPECT_GT(o.split.detection + o.split.relaunch + o.split.restore, 0);
  }
}

TEST(ClusterSimulator, AnAsynchronousWriteCostsNothingUntilItOutlastsTheInterval) {
  // No failure in the window (M of a million hours): the job computes T of every T + C, whatever the write W,
  // until W > T; then each save waits for the previous write, and the cycle is W + C. The first save, with no
  // write in flight yet, does not wait: its cycle is T + C.
  const auto model = single_rate_model(1e6 * kHour);
  auto c = config(1024, 0);
  const double T = 3600, C = 300;
  c.costs.checkpoint_s = C;
  c.wall_s = 100 * (T + C);  // whole cycles: nothing half done at the window's end
  for (const double w : {0.0, 600.0, 3600.0}) {
    c.costs.commit_s = w;
    const auto o = simulate_trial(model, c, T, 5);
    ASSERT_EQ(o.failures, 0u) << w;
    EXPECT_NEAR(o.split.productive / o.wall_s, T / (T + C), 1e-9) << w;
  }
  c.costs.commit_s = 5400;
  c.wall_s = (T + C) + 99 * (5400 + C);
  const auto o = simulate_trial(model, c, T, 5);
  EXPECT_NEAR(o.split.productive, 100 * T, 1e-6);
  EXPECT_NEAR(o.split.checkpoint, C + 99 * (5400 - T + C), 1e-6);
  // A fixed work of 3 T + 100 s: three saves (the last work's save lies outside the job), the first at once.
  c.work_s = 3 * T + 100;
  c.wall_s = 100 * c.work_s;
  const auto f = simulate_trial(model, c, T, 5);
  EXPECT_TRUE(f.finished);
  EXPECT_NEAR(f.wall_s, (T + C) + 2 * (5400 + C) + 100, 1e-6);
  EXPECT_NEAR(f.split.productive, c.work_s, 1e-6);
  EXPECT_NEAR(f.split.checkpoint, 3 * C + 2 * (5400 - T), 1e-6);
  // Ending inside the first cycle's compute, or right at its end: no save at all.
  for (const double work : {0.5 * T, T}) {
    c.work_s = work;
    const auto s = simulate_trial(model, c, T, 5);
    EXPECT_NEAR(s.wall_s, work, 1e-6) << work;
    EXPECT_EQ(s.split.checkpoint, 0) << work;
  }
}

TEST(ClusterSimulator, AnAsynchronousWriteLosesTheSavedIntervalToAFailureBeforeItsCommit) {
  // M ≫ T + C: a failure strikes at a uniformly random moment of the cycle. Uncommitted then (W ≤ T): the
  // previous interval and the compute so far before the write ends (x < W), the compute so far after it,
  // T during the blocking save: on average (W·T + T²/2 + C·T)/(T + C) lost per failure. T = 1 h, C = 5 min:
  // 1938 s synchronous (W = 0), 3600 s with a 30-minute write.
  const auto model = single_rate_model(200 * kHour);
  auto c = config(1024, 2000);
  const double T = 3600, C = 300;
  c.costs.checkpoint_s = C;
  for (const double w : {0.0, 1800.0}) {
    c.costs.commit_s = w;
    const auto s = simulate(model, c, T, 20, 17);
    const double lost_per_failure = s.mean_split.redone / s.failures.mean();
    const double expected = (w * T + T * T / 2 + C * T) / (T + C);
    EXPECT_NEAR(lost_per_failure / expected, 1.0, 0.03) << "W " << w << ": " << lost_per_failure << " s";
  }
  c.costs.commit_s = -1;
  EXPECT_THROW(simulate(model, c, T, 1, 1), Error);
}

TEST(ClusterSimulator, TheFirstSaveAfterARestartWaitsForNoWrite) {
  // Failures at rate λ (M = 2 h), recovery all but free, T = 1 h, C = 5 min, a 90-minute write: after each
  // start, a save of C, then saves of C + (W − T). A run is cut at an exponential time, so the share of the
  // wall time spent saving is Σ over the blocking stretches [a, b) of e^{−λa} − e^{−λb}: 18.8% (28.1% if the
  // first save waited too, as this simulator had it).
  const auto model = single_rate_model(2 * kHour);
  auto c = config(1024, 2000);
  const double T = 3600, C = 300, W = 5400, lambda = 1 / (2 * kHour);
  c.costs = {C, 1e-3, 1e-3, 1e-3, W};  // recovery must take some time: a millisecond, nothing here
  double expected = 0, t = 0;
  for (int k = 0; k < 200; ++k) {
    const double a = t + T, b = a + C + (k == 0 ? 0 : W - T);
    expected += std::exp(-lambda * a) - std::exp(-lambda * b);
    t = b;
  }
  const auto s = simulate(model, c, T, 20, 23);
  EXPECT_NEAR(s.mean_split.checkpoint / s.mean_wall_s, expected, 0.02 * expected);
  EXPECT_NEAR(s.mean_split.total(), s.mean_wall_s, 1e-6 * s.mean_wall_s);
}

TEST(ClusterSimulator, FixedWorkWithoutFailuresTakesTheWorkPlusItsCheckpoints) {
  // M = 10^9 h: no failure in practice. 10 days of work at T = 1 h, C = 6 min: the job saves after every hour
  // but the last (239 saves; the final one lies outside the job), so it takes 240 h + 239 × 6 min.
  const auto model = single_rate_model(1e9 * kHour);
  auto c = config(1024, 1);
  c.work_s = 10 * kDay;
  c.wall_s = 100 * c.work_s;
  c.costs.checkpoint_s = 360;
  const auto o = simulate_trial(model, c, kHour, 3);
  ASSERT_EQ(o.failures, 0);
  EXPECT_TRUE(o.finished);
  EXPECT_NEAR(o.wall_s, 240 * kHour + 239 * 360.0, 1e-6);
  EXPECT_NEAR(o.split.productive, c.work_s, 1e-6);
  EXPECT_NEAR(o.split.total(), o.wall_s, 1e-6);
}

TEST(ClusterSimulator, FixedWorkTimeToTrainMatchesTheWindowGoodput) {
  // The same cluster run as a 30-day window and as a fixed 20 days of work: the time to train is the work
  // over the window's goodput (within the Monte Carlo noise), every trial's parts sum to its own wall time.
  const auto model = load_failure_model("llama3-h100");
  auto window = config(16384, 30);
  const auto w = simulate(model, window, 1800, 200, 11);
  auto work = window;
  work.work_s = 20 * kDay;
  work.wall_s = 100 * work.work_s;
  const auto f = simulate(model, work, 1800, 200, 11);
  EXPECT_EQ(f.unfinished, 0);
  EXPECT_NEAR(f.wall_s.mean(), work.work_s / (w.goodput_pct.mean() / 100), 0.01 * f.wall_s.mean());
  EXPECT_NEAR(f.mean_split.total(), f.mean_wall_s, 1e-6 * f.mean_wall_s);
  EXPECT_NEAR(f.mean_split.productive, work.work_s, 1e-6 * work.work_s);
  // Shares of each trial's own wall time, averaged: they sum to 100, the productive one being the goodput.
  // (Mean seconds over the mean wall time would not: with --work-days the slow trials weigh more.)
  double pct = 0;
  for (double p : f.mean_split_pct) pct += p;
  EXPECT_NEAR(pct, 100.0, 1e-9);
  EXPECT_NEAR(f.mean_split_pct[0], f.goodput_pct.mean(), 1e-9);
  for (std::uint64_t seed : {1, 2}) {
    const auto o = simulate_trial(model, work, 1800, seed);
    EXPECT_NEAR(o.split.total(), o.wall_s, 1e-6 * o.wall_s);
    EXPECT_GT(o.wall_s, work.work_s);
  }
}

TEST(ClusterSimulator, FewSparesAndLongRepairsMakeTheJobWait) {
  const auto model = load_failure_model("llama3-h100");
  auto c = config(16384, 20);
  c.spares = 2;
  c.repair_s = 5 * kDay;
  const auto scarce = simulate(model, c, 1200, 20, 5);
  c.spares.reset();
  const auto unlimited = simulate(model, c, 1200, 20, 5);
  EXPECT_GT(scarce.mean_split.spare_wait, 0);
  EXPECT_EQ(unlimited.mean_split.spare_wait, 0);
  EXPECT_LT(scarce.goodput_pct.mean(), unlimited.goodput_pct.mean());
}

TEST(ClusterSimulator, StragglersCostTimeUntilDrained) {
  const auto model = load_failure_model("llama3-h100");
  auto c = config(16384, 20);
  c.straggler_share = 0.01;
  c.straggler_factor = 1.25;
  const auto kept = simulate(model, c, 1200, 20, 5);
  c.drain = DrainPolicy::drain;
  const auto drained = simulate(model, c, 1200, 20, 5);
  EXPECT_GT(kept.mean_split.straggler, 0.15 * c.wall_s);  // ~all of the time at 1/1.25 speed
  EXPECT_LT(drained.mean_split.straggler, 0.01 * c.wall_s);
  EXPECT_GT(drained.mean_drained_nodes, 10);
  EXPECT_GT(drained.goodput_pct.mean(), kept.goodput_pct.mean());
  EXPECT_NEAR(
      kept.ettr.mean(),
      (kept.mean_split.productive + kept.mean_split.straggler + kept.mean_split.checkpoint) / c.wall_s, 1e-9);
}

TEST(ClusterSimulator, DrainRetiresFlakyNodes) {
  auto model = load_failure_model("meta-rsc1-a100");
  model.categories[0].traits.needs_replacement = false;  // restart in place, so only draining removes nodes
  auto c = config(2048, 60);
  c.flaky_share = 0.02;
  c.flaky_factor = 100;  // 2% of the nodes carry 2/2.98 = 67% of the failures
  const auto none = simulate(model, c, 1800, 20, 8);
  c.drain = DrainPolicy::drain;
  c.drain_after = 2;
  const auto drain = simulate(model, c, 1800, 20, 8);
  EXPECT_LT(drain.failures.mean(), 0.7 * none.failures.mean());
  EXPECT_GT(drain.goodput_pct.mean(), none.goodput_pct.mean());
}

// Flaky nodes redistribute the published failures, they do not change their count: with failed nodes
// replaced by fresh ones of the same fleet, the job expects rate × window (it used to see 22% fewer, and more
// goodput, for 2% of nodes 50× flaky: the rate was normalised at the start only, and the job shed them).
TEST(ClusterSimulator, FlakyNodesKeepThePublishedFailureCount) {
  const auto model = load_failure_model("llama3-h100");
  auto c = config(16384, 30);
  const auto plain = simulate(model, c, 1800, 200, 5);
  c.flaky_share = 0.02;
  c.flaky_factor = 50;
  const auto flaky = simulate(model, c, 1800, 200, 5);
  ASSERT_NEAR(flaky.expected_failures, 232.8, 0.1);
  // A trial's count has a standard deviation of about √233 ≈ 15: the mean of 200 is good to about 1.1.
  EXPECT_NEAR(flaky.failures.mean(), flaky.expected_failures, 4.5);
  EXPECT_NEAR(plain.failures.mean(), plain.expected_failures, 4.5);
  EXPECT_NEAR(flaky.goodput_pct.mean(), plain.goodput_pct.mean(), 0.25);
}

// The per-node rate of a non-flaky node: without replacement the start's normalisation, with a long horizon
// the steady state's; in between the two, and the expected count it gives is the published one.
TEST(ClusterSimulator, FlakyBaseRateNormalisesTheCountOverTheHorizon) {
  const double r = 1.0 / (1000 * kHour), s = 0.02, f = 50;
  EXPECT_DOUBLE_EQ(flaky_base_rate(r, s, f, 0.0, 30 * kDay), r / (1 - s + s * f));
  EXPECT_DOUBLE_EQ(flaky_base_rate(r, 0.0, f, 0.7, 30 * kDay), r);
  EXPECT_DOUBLE_EQ(flaky_base_rate(r, s, 1.0, 0.7, 30 * kDay), r);
  EXPECT_NEAR(flaky_base_rate(r, s, f, 1.0, 1e6 * kDay), r * (1 - s + s / f), 1e-6 * r);
  const double c = flaky_base_rate(r, s, f, 0.7, 30 * kDay);
  EXPECT_GT(c, r / (1 - s + s * f));
  EXPECT_LT(c, r * (1 - s + s / f));
  // The same count by stepping the slot's two-state chain in small steps.
  const double h = 30 * kDay, dt = 60;
  double p = s, count = 0;
  for (double t = 0; t < h; t += dt) {
    count += c * (1 + (f - 1) * p) * dt;
    p += (-p * c * f * 0.7 * (1 - s) + (1 - p) * c * 0.7 * s) * dt;
  }
  EXPECT_NEAR(count, r * h, 1e-3 * r * h);
}

TEST(ClusterSimulator, AutoIntervalSearchLandsNearDaly) {
  const auto model = single_rate_model(6 * kHour);
  auto c = config(1024, 30);
  c.costs.checkpoint_s = 300;
  const auto choice = choose_interval(IntervalPolicy::search, std::nullopt, model, c, 100, 11);
  EXPECT_NEAR(choice.daly_s / 60, 56.7, 0.1);
  EXPECT_NEAR(choice.young_s / 60, 60.0, 1e-9);
  EXPECT_EQ(choice.searched.size(), 13u);
  // The goodput curve is flat near the optimum: the search lands within a factor 1.6 of Daly's interval.
  EXPECT_GT(choice.interval_s, choice.daly_s / 1.6);
  EXPECT_LT(choice.interval_s, choice.daly_s * 1.6);
}

// The search runs on trials of its own: the chosen interval's goodput on the reported trials is not the
// search's maximum over 13 candidates on those same trials (an upward-biased figure).
TEST(ClusterSimulator, AutoIntervalSearchDrawsItsOwnTrials) {
  const auto model = single_rate_model(6 * kHour);
  auto c = config(1024, 30);
  c.costs.checkpoint_s = 300;
  const auto choice = choose_interval(IntervalPolicy::search, std::nullopt, model, c, 50, 11);
  const double reported = simulate(model, c, choice.interval_s, 50, 11).goodput_pct.mean();
  double searched_best = 0;
  for (const auto& [interval, g] : choice.searched) searched_best = std::max(searched_best, g);
  EXPECT_NE(reported, searched_best);
}

// A job MTBF shorter than a save: every candidate ties at 0% goodput; none is shorter than the save.
TEST(ClusterSimulator, AutoIntervalIsNeverShorterThanASave) {
  const auto model = single_rate_model(60);
  auto c = config(8, 1);
  c.costs.checkpoint_s = 300;
  const auto choice = choose_interval(IntervalPolicy::search, std::nullopt, model, c, 5, 3);
  EXPECT_GE(choice.interval_s, 300.0);
  for (const auto& [interval, g] : choice.searched) EXPECT_GE(interval, 300.0);
  // The candidates below the save are the save cost, simulated and listed once (not one per k).
  for (std::size_t i = 1; i < choice.searched.size(); ++i)
    EXPECT_LT(choice.searched[i - 1].first, choice.searched[i].first);
  EXPECT_LT(choice.searched.size(), 13u);
}

TEST(ClusterSimulator, FixedIntervalShorterThanCheckpointIsRejected) {
  const auto model = single_rate_model(6 * kHour);
  auto c = config(1024, 1);
  EXPECT_THROW(choose_interval(IntervalPolicy::fixed, 30.0, model, c, 10, 1), Error);
  EXPECT_EQ(choose_interval(IntervalPolicy::fixed, 600.0, model, c, 10, 1).interval_s, 600.0);
}

TEST(ClusterSimulator, RejectsBadConfigurations) {
  auto c = config(1024, 1);
  c.spares = 129;  // 128 nodes
  EXPECT_THROW(validate(c), Error);
  c = config(1020, 1);
  EXPECT_THROW(validate(c), Error);
  c = config(1024, 0);
  EXPECT_THROW(validate(c), Error);
  c = config(1024, 1);
  c.costs.restore_s = -1;
  EXPECT_THROW(validate(c), Error);
  c = config(1024, 1);
  c.straggler_factor = 0.5;
  EXPECT_THROW(validate(c), Error);
}

TEST(ClusterSimulator, RefusesAbsurdSizes) {
  auto c = config(kMaxGpus + 8, 1);
  EXPECT_THROW(validate(c), Error);
  c = config(8, kMaxDays + 1);
  EXPECT_THROW(validate(c), Error);
  EXPECT_THROW(simulate(single_rate_model(6 * kHour), config(8, 1), 600, kMaxTrials + 1, 1), Error);
}

TEST(ClusterSimulator, EstimatesTheEventsOfATrial) {
  // 1024 GPUs, a job MTBF of 6 h, 30 days: 120 expected failures plus 128 node resets at a tenth of an event
  // each, plus one.
  EXPECT_NEAR(estimated_trial_events(single_rate_model(6 * kHour), config(1024, 30)), 120 + 12.8 + 1, 1e-9);
  // A fixed work of 10 days is estimated at 50% goodput: 20 days of wall time, 80 failures.
  auto c = config(1024, 1);
  c.work_s = 10 * kDay;
  c.wall_s = 100 * c.work_s;
  EXPECT_NEAR(estimated_trial_events(single_rate_model(6 * kHour), c), 80 + 12.8 + 1, 1e-9);
  // A spare pool that node failures empty faster than repairs refill it: the trial waits for spares until
  // the cap (100 x the work). Meta RSC-1 at 16,384 GPUs (2,048 nodes, 6.5 failures per 1,000 node-days, all
  // node-attributed) with 48 h repairs keeps ~26.6 nodes in repair; 8 spares run out, 64 do not.
  const auto rsc = load_failure_model("meta-rsc1-a100");
  auto w = config(16384, 1);
  w.work_s = 10 * kDay;
  w.wall_s = 100 * w.work_s;
  w.repair_s = 48 * kHour;
  w.spares = 64;
  const double enough = estimated_trial_events(rsc, w);
  w.spares = 8;
  const double starved = estimated_trial_events(rsc, w);
  EXPECT_NEAR(starved - 2048 / 10.0 - 1, 50 * (enough - 2048 / 10.0 - 1), 1e-6);  // 1000 days, not 20
}

TEST(ClusterSimulator, ReportsProgressAfterEveryTrial) {
  const auto model = single_rate_model(6 * kHour);
  std::vector<int> seen;
  simulate(model, config(64, 2), 3600, 5, 3, [&](int done) { seen.push_back(done); });
  EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4, 5}));
  // The interval search counts across its candidates: 13 × min(trials, 200).
  int last = 0, calls = 0;
  choose_interval(IntervalPolicy::search, std::nullopt, model, config(64, 2), 4, 3, [&](int done) {
    EXPECT_EQ(done, last + 1);
    last = done, ++calls;
  });
  EXPECT_EQ(calls, interval_search_trials(IntervalPolicy::search, 4));
  EXPECT_EQ(calls, 52);
  EXPECT_EQ(interval_search_trials(IntervalPolicy::daly, 4), 0);
}

TEST(StreamingSummary, ExactPercentilesThenBoundedEstimates) {
  StreamingSummary s;
  for (int i = 1; i <= 100; ++i) s.add(i);
  EXPECT_EQ(s.percentile(5), 5);
  EXPECT_EQ(s.percentile(50), 50.5);  // the median, as stats() states it: the mean of the middle two
  EXPECT_EQ(s.percentile(50), s.stats().median);
  EXPECT_EQ(s.percentile(95), 95);
  EXPECT_DOUBLE_EQ(s.mean(), 50.5);
  EXPECT_EQ(s.stats().n, 100u);
  // Past the exact cap the P² markers take over: uniform 0..1 → p5 ≈ 0.05, p95 ≈ 0.95.
  StreamingSummary big;
  std::uint64_t x = 1;
  for (std::size_t i = 0; i < kExactSampleCap * 4; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    big.add(static_cast<double>(x >> 11) * 0x1.0p-53);
  }
  EXPECT_NEAR(big.percentile(5), 0.05, 0.01);
  EXPECT_NEAR(big.percentile(50), 0.5, 0.01);
  EXPECT_NEAR(big.percentile(95), 0.95, 0.01);
  EXPECT_NEAR(big.stats().mean, 0.5, 0.01);
}

// A count (failures per trial) past the exact cap keeps its exact ranks: P² would interpolate between the
// counts. 4097 samples: 3893 zeros, 200 ones, 4 twos → p95 = rank 3893 (0), p99 = rank 4057 (1).
TEST(StreamingSummary, CountsStayExactPastTheSampleCap) {
  StreamingSummary s;
  for (int i = 0; i < 3893; ++i) s.add(0);
  for (int i = 0; i < 200; ++i) s.add(1);
  for (int i = 0; i < 4; ++i) s.add(2);
  ASSERT_EQ(s.count(), kExactSampleCap + 1);
  EXPECT_EQ(s.percentile(5), 0);
  EXPECT_EQ(s.percentile(50), 0);
  EXPECT_EQ(s.percentile(95), 0);
  EXPECT_EQ(s.percentile(99), 1);
  EXPECT_EQ(s.stats().median, 0);
  EXPECT_EQ(s.stats().p99, 1);
  EXPECT_EQ(s.stats().max, 2);
  // An even count's median is the mean of the middle two, as below the cap: 2049 ones then 2049 threes.
  StreamingSummary even;
  for (int i = 0; i < 2049; ++i) even.add(1);
  for (int i = 0; i < 2049; ++i) even.add(3);
  EXPECT_EQ(even.percentile(50), 2);
  EXPECT_EQ(even.percentile(5), 1);
  EXPECT_EQ(even.percentile(95), 3);
  // Once past the cap, a quantity that turns out to take more than kExactSampleCap values falls back to the
  // P² estimates mid-stream: uniform [0, 1), its first 4097 samples on a grid of 1/1024 (1024 values, so
  // still counted), the rest not.
  StreamingSummary mixed;
  std::uint64_t x = 7;
  for (std::size_t i = 0; i < 4 * kExactSampleCap; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
    mixed.add(i <= kExactSampleCap ? std::floor(u * 1024) / 1024 : u);
  }
  EXPECT_NEAR(mixed.percentile(5), 0.05, 0.02);
  EXPECT_NEAR(mixed.percentile(50), 0.5, 0.02);
  EXPECT_NEAR(mixed.percentile(95), 0.95, 0.02);
}

TEST(Calibration, ReadsPerEventCostsFromTheResilienceLedger) {
  reports::Report report;
  reports::Result r;
  r.benchmark = "resilience";
  r.name = "tiny-dense";
  r.set_metric("failures", {3, "count", reports::Better::lower, std::nullopt});
  r.set_metric("restarts", {3, "count", reports::Better::lower, std::nullopt});
  // 4 attempts (3 restarts), 5 saves of 0.5 s each; totals as the ledger writes them.
  r.extra["ledger"] = {
      {"attempts", 4},
      {"checkpoints", {{"saves", 5}, {"save_blocking_s", 2.5}}},
      {"badput_s", {{"detection", 6.0}, {"relaunch", 30.0}, {"init", 8.0}, {"ckpt_restore", 12.0}}}};
  report.results.push_back(r);
  auto cal = calibrate_from_report(report, "run.json");
  EXPECT_DOUBLE_EQ(*cal.checkpoint_s, 0.5);  // per save, not the run's total
  EXPECT_DOUBLE_EQ(*cal.detection_s, 2.0);
  EXPECT_DOUBLE_EQ(*cal.relaunch_s, 10.0 + 2.0);  // relaunch per restart + init per attempt
  EXPECT_DOUBLE_EQ(*cal.restore_s, 4.0);
  EXPECT_TRUE(cal.missing.empty());

  EXPECT_TRUE(cal.unmeasured.empty());
  EXPECT_FALSE(
      cal.commit_s);  // a report of an earlier version: no commit times, the option or default stands
  EXPECT_TRUE(cal.relaunch_has_init);
  // Asynchronous saves: the write time until durable is the mean snapshot-end-to-commit time; a run whose
  // saves were all synchronous calibrates it to 0.
  auto& checkpoints = report.results[0].extra["ledger"]["checkpoints"];
  checkpoints["async_commits"] = 4;
  checkpoints["async_commit_s"] = 10.0;
  cal = calibrate_from_report(report, "run.json");
  EXPECT_DOUBLE_EQ(*cal.commit_s, 2.5);
  EXPECT_FALSE(cal.commit_sync);
  checkpoints["async_commits"] = 0;
  checkpoints["async_commit_s"] = 0.0;
  cal = calibrate_from_report(report, "run.json");
  EXPECT_DOUBLE_EQ(*cal.commit_s, 0);
  EXPECT_TRUE(cal.commit_sync);
  checkpoints["async_commit_s"] = -1.0;  // garbled: refused with its field
  EXPECT_THROW(calibrate_from_report(report, "run.json"), Error);
  checkpoints.erase("async_commits");
  checkpoints.erase("async_commit_s");
  cal = calibrate_from_report(report, "run.json");
  EXPECT_TRUE(cal.detection_from.empty());  // the ledger did not say which failures
  EXPECT_FALSE(cal.detection_in_step_only);

  // Which failures the detection is the mean over: crashes and hangs (the launcher, a watchdog) and the
  // kinds the step itself finds, which take no time to detect.
  report.results[0].extra["ledger"]["failures_by_kind"] = {{"crash", 2}, {"sdc", 1}, {"hang", 0}};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_EQ(cal.detection_from, (std::map<std::string, double>{{"crash", 2}, {"sdc", 1}}));
  EXPECT_FALSE(cal.detection_in_step_only);
  report.results[0].extra["ledger"]["failures_by_kind"] = {{"sdc", 2}, {"nan", 1}};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_TRUE(cal.detection_in_step_only);
  EXPECT_DOUBLE_EQ(*cal.detection_s, 2.0);  // still the measured figure; the command warns
  report.results[0].extra["ledger"]["failures_by_kind"] = {
      {"nan", "one"}};  // garbled: refused, with its path
  EXPECT_THROW(calibrate_from_report(report, "run.json"), Error);
  report.results[0].extra["ledger"].erase("failures_by_kind");

  // The counts are the ledger's when it has them (the metrics are the same figures in older reports).
  report.results[0].extra["ledger"]["failures"] = 6;
  report.results[0].extra["ledger"]["restarts"] = 2;
  cal = calibrate_from_report(report, "run.json");
  EXPECT_DOUBLE_EQ(*cal.detection_s, 1.0);
  EXPECT_DOUBLE_EQ(*cal.restore_s, 6.0);
  report.results[0].extra["ledger"].erase("failures");
  report.results[0].extra["ledger"].erase("restarts");

  // No init or attempts: relaunch alone, and the part left out is named.
  reports::Result no_init = r;
  no_init.extra["ledger"]["badput_s"].erase("init");
  report.results = {no_init};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_DOUBLE_EQ(*cal.relaunch_s, 10.0);
  EXPECT_FALSE(cal.relaunch_has_init);
  EXPECT_EQ(cal.missing, (std::vector<std::string>{"badput_s.init"}));
  report.results = {r};

  // An older report: no ledger, the summary's badput totals only; what cannot be found is named.
  report.results[0].extra = nlohmann::json::object();
  report.summary["badput_s"] = {{"detection", 6.0}, {"relaunch", 30.0}};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_FALSE(cal.checkpoint_s);
  EXPECT_DOUBLE_EQ(*cal.relaunch_s, 10.0);
  EXPECT_EQ(cal.missing, (std::vector<std::string>{"extra.ledger.checkpoints.save_blocking_s",
                                                   "extra.ledger.checkpoints.saves", "badput_s.init",
                                                   "badput_s.ckpt_restore"}));
  EXPECT_EQ(cal.restarts_from, "restarts");
  // ... but not when the report holds several jobs (--policy compare): its summary totals another one.
  report.results.push_back(report.results[0]);
  report.results[1].name = "tiny-dense/policy-drain";
  cal = calibrate_from_report(report, "run.json");
  EXPECT_FALSE(cal.detection_s);
  EXPECT_FALSE(cal.relaunch_s);
  report.results.pop_back();
  report.summary.erase("badput_s");

  // No failure and no restart: nothing per failure was measured, and the report says why, not "missing".
  reports::Result quiet = r;
  quiet.set_metric("failures", {0, "count", reports::Better::lower, std::nullopt});
  quiet.set_metric("restarts", {0, "count", reports::Better::lower, std::nullopt});
  report.results = {quiet};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_TRUE(cal.missing.empty());
  EXPECT_EQ(cal.unmeasured, (std::map<std::string, std::string>{{"detection", "the run had no failure"},
                                                                {"relaunch", "the run restarted nothing"},
                                                                {"restore", "the run restarted nothing"}}));
  EXPECT_DOUBLE_EQ(*cal.checkpoint_s, 0.5);
  // A failure never restarted (--max-restarts 0): detection is measured, relaunch and restore are not (the
  // ledger's restore is then the first attempt's, not a restart's).
  quiet.set_metric("failures", {1, "count", reports::Better::lower, std::nullopt});
  report.results = {quiet};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_DOUBLE_EQ(*cal.detection_s, 6.0);
  EXPECT_FALSE(cal.restore_s);
  EXPECT_EQ(cal.unmeasured.at("restore"), "the run restarted nothing");
  // A report with no restart count at all (an older version): every failure restarted.
  quiet.metrics.erase(std::remove_if(quiet.metrics.begin(), quiet.metrics.end(),
                                     [](const auto& m) { return m.first == "restarts"; }),
                      quiet.metrics.end());
  report.results = {quiet};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_EQ(cal.restarts_from, "failures");
  EXPECT_DOUBLE_EQ(*cal.restore_s, 12.0);
  // A total of zero over real events is not a cost either: said, not defaulted as "missing".
  reports::Result instant = r;
  instant.extra["ledger"]["badput_s"]["detection"] = 0.0;
  report.results = {instant};
  cal = calibrate_from_report(report, "run.json");
  EXPECT_EQ(cal.unmeasured.at("detection"), "badput_s.detection is 0 over 3 failures");
  EXPECT_TRUE(cal.missing.empty());

  report.results.clear();
  EXPECT_THROW(calibrate_from_report(report, "run.json"), Error);

  // A negative cost (a hand-edited report) is refused with its field, not reported as missing.
  reports::Result edited = r;
  edited.extra["ledger"]["badput_s"]["detection"] = -5.0;
  report.results = {edited};
  try {
    calibrate_from_report(report, "run.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--calibrate run.json: badput_s.detection is -5: a time or count must be a finite number of at "
              "least 0");
  }
  edited = r;
  edited.extra["ledger"]["failures"] = -2;  // the ledger's own count is checked, not just the metric
  report.results = {edited};
  EXPECT_THROW(calibrate_from_report(report, "run.json"), Error);
  edited = r;
  edited.extra["ledger"]["badput_s"]["relaunch"] = "abc";  // a garbled field is an error, not "missing"
  report.results = {edited};
  try {
    calibrate_from_report(report, "run.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "--calibrate run.json: result resilience/tiny-dense: $.extra.ledger.badput_s.relaunch: expected a "
        "number");
  }
  edited = r;
  edited.extra["ledger"]["checkpoints"]["save_blocking_s"] = -30.0;
  report.results = {edited};
  EXPECT_THROW(calibrate_from_report(report, "run.json"), Error);
}

}  // namespace
}  // namespace fb::resilience
