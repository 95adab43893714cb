// compare: every verdict in both directions, noise, floors and ceilings, missing/new results, rules parsing
// and the errors that name the JSON path. Reports are built by hand with the Report types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/error.hpp"
#include "reports/compare.hpp"
#include "reports/compare_rules.hpp"
#include "reports/report_json.hpp"

namespace fb::reports {
namespace {

Metric metric(double value, Better better, std::string unit = "GB/s", double stddev = -1, std::size_t n = 0) {
  Metric m;
  m.value = value;
  m.unit = std::move(unit);
  m.better = better;
  if (stddev >= 0) {
    SampleStats s;
    s.min = value - 2 * stddev;
    s.median = value;
    s.max = value + 2 * stddev;
    s.mean = value;
    s.p99 = s.max;
    s.stddev = stddev;
    s.n = n;
    m.stats = s;
  }
  return m;
}

Result result(std::string benchmark, std::string name, std::vector<std::pair<std::string, Metric>> metrics) {
  Result r;
  r.benchmark = std::move(benchmark);
  r.name = std::move(name);
  r.metrics = std::move(metrics);
  return r;
}

Report report(std::vector<Result> results, std::string backend = "cuda", int world = 8) {
  Report rep;
  rep.run = {{"id", "r1"}, {"backend", backend}, {"world_size", world}};
  rep.results = std::move(results);
  return rep;
}

// Compares one metric value pair under the given rules and returns its single row.
MetricComparison one(double b, double c, Better better, const CompareRules& rules = {}) {
  const auto base =
      report({result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(b, better)}})});
  const auto cand =
      report({result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(c, better)}})});
  const auto cmp = compare_reports(base, cand, rules);
  EXPECT_EQ(cmp.rows.size(), 1u);
  return cmp.rows.at(0);
}

TEST(Compare, SameWithinTolerance) {
  const auto row = one(100, 104, Better::higher);
  EXPECT_EQ(row.verdict, Verdict::same);
  EXPECT_NEAR(*row.change, 0.04, 1e-12);
  EXPECT_NEAR(*row.ratio, 1.04, 1e-12);
  EXPECT_FALSE(row.fails);
  EXPECT_EQ(row.reason, "within ±5% tolerance");
  EXPECT_EQ(one(100, 95, Better::higher).verdict, Verdict::same);  // the edge is inclusive
}

TEST(Compare, HigherIsBetterBothDirections) {
  EXPECT_EQ(one(100, 110, Better::higher).verdict, Verdict::better);
  const auto worse = one(100, 90, Better::higher);
  EXPECT_EQ(worse.verdict, Verdict::worse);
  EXPECT_TRUE(worse.fails);
  EXPECT_EQ(worse.reason, "-10.0% beyond ±5% tolerance");
}

// The tolerance as configured: 19.99% read "±20%" beside the -20.0% it failed, and 1000% read "1e+03%".
TEST(Compare, ReasonsStateTheToleranceAsConfigured) {
  CompareRules rules;
  rules.tolerance = 0.1999;
  EXPECT_EQ(one(100, 80, Better::higher, rules).reason, "-20.0% beyond ±19.99% tolerance");
  rules.tolerance = 10.0;
  EXPECT_EQ(one(100, 80, Better::higher, rules).reason, "within ±1000% tolerance");
}

TEST(Compare, LowerIsBetterBothDirections) {
  EXPECT_EQ(one(100, 90, Better::lower).verdict, Verdict::better);
  EXPECT_EQ(one(100, 110, Better::lower).verdict, Verdict::worse);
  EXPECT_EQ(one(100, 103, Better::lower).verdict, Verdict::same);
}

TEST(Compare, NoDirectionIsInfoAndNeverFails) {
  const auto row = one(100, 300, Better::none);
  EXPECT_EQ(row.verdict, Verdict::info);
  EXPECT_FALSE(row.fails);
}

TEST(Compare, CustomToleranceFromRules) {
  CompareRules rules;
  rules.tolerance = 0.15;
  EXPECT_EQ(one(100, 90, Better::higher, rules).verdict, Verdict::same);
  rules.tolerance = 0.0;
  EXPECT_EQ(one(100, 100.5, Better::higher, rules).verdict, Verdict::better);
}

// A millisecond timing that moves by 2 ms is a 20% change: abs_tolerance (in the metric's unit) keeps it
// SAME, in either direction, while a change beyond both tolerances is still decided.
TEST(Compare, AbsoluteToleranceInTheMetricsUnit) {
  CompareRules rules;
  rules.rules.push_back(
      compare_rules_from_json(
          nlohmann::json::parse(R"({"rules": [{"metric": "busbw_gbps", "abs_tolerance": 0.002}]})"),
          "rules.json")
          .rules.at(0));
  auto row = one(0.010, 0.012, Better::lower, rules);
  EXPECT_EQ(row.verdict, Verdict::same);
  EXPECT_EQ(row.reason, "+0.002 within ±0.002 GB/s absolute tolerance");
  EXPECT_DOUBLE_EQ(*row.abs_tolerance, 0.002);
  EXPECT_EQ(one(0.010, 0.008, Better::lower, rules).verdict, Verdict::same);
  row = one(0.010, 0.0131, Better::lower, rules);
  EXPECT_EQ(row.verdict, Verdict::worse);
  EXPECT_EQ(row.reason, "+31.0% beyond ±5% tolerance");
  // Within the relative tolerance the note stays the relative one.
  EXPECT_EQ(one(100, 104, Better::higher, rules).reason, "within ±5% tolerance");
  // Without the rule the same 2 ms is WORSE.
  EXPECT_EQ(one(0.010, 0.012, Better::lower).verdict, Verdict::worse);
}

TEST(Compare, BaselineZero) {
  EXPECT_EQ(one(0, 0, Better::lower).verdict, Verdict::same);
  EXPECT_EQ(one(0, 1, Better::lower).verdict, Verdict::worse);
  EXPECT_EQ(one(0, 1, Better::higher).verdict, Verdict::better);
}

TEST(Compare, NullCandidateIsWorse) {
  EXPECT_EQ(one(100, std::nan(""), Better::higher).verdict, Verdict::worse);
  EXPECT_EQ(one(std::nan(""), 100, Better::higher).verdict, Verdict::ambiguous);
  // Broken on both sides is still broken: a measurement does not pass by staying broken.
  const auto both = one(std::nan(""), std::nan(""), Better::higher);
  EXPECT_EQ(both.verdict, Verdict::worse);
  EXPECT_TRUE(both.fails);
  EXPECT_EQ(both.reason, "candidate value is null (and baseline value)");
  EXPECT_EQ(one(std::nan(""), std::nan(""), Better::none).verdict, Verdict::info);
}

// A derived metric (mfu = tflops / peak) carries its source's spread scaled alike, so the same noisy -15%
// change is AMBIGUOUS for both (mfu used to have no stats and was WORSE while tflops was AMBIGUOUS).
TEST(Compare, ADerivedMetricIsAsNoisyAsItsSource) {
  const auto tflops = metric(100, Better::higher, "TFLOP/s", 10, 20);
  const auto mfu = scaled_metric(tflops, 1.0 / 400, "fraction", Better::higher);
  EXPECT_DOUBLE_EQ(mfu.value, 0.25);
  ASSERT_TRUE(mfu.stats);
  EXPECT_DOUBLE_EQ(mfu.stats->stddev, 10.0 / 400);
  EXPECT_DOUBLE_EQ(mfu.stats->max, 120.0 / 400);
  EXPECT_EQ(mfu.stats->n, 20u);
  const auto slower = metric(85, Better::higher, "TFLOP/s", 10, 20);
  const EffectiveRule rule{0.05, std::nullopt, std::nullopt, false};
  const auto a = judge_metric(tflops, slower, rule, 2.0, 0.10);
  const auto b =
      judge_metric(mfu, scaled_metric(slower, 1.0 / 400, "fraction", Better::higher), rule, 2.0, 0.10);
  EXPECT_EQ(a.verdict, Verdict::ambiguous);
  EXPECT_EQ(b.verdict, a.verdict);
  EXPECT_NEAR(*b.noise, *a.noise, 1e-12);
}

// A floor whose names match nothing gates nothing: compare says so (a warning, not a failure).
TEST(Compare, AFloorThatMatchesNothingIsWarnedAbout) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("colective/* busbw_gbps >= 1000", "rules.json: $.rules[0]"));
  rules.rules.push_back(parse_bound_rule("collective/* busbw_gbps >= 1", "rules.json: $.rules[1]"));
  const auto r =
      report({result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(10, Better::higher)}})});
  const auto cmp = compare_reports(r, r, rules, "base.json", "cand.json");
  ASSERT_EQ(cmp.warnings.size(), 1u);
  EXPECT_EQ(
      cmp.warnings[0],
      "rules.json: $.rules[0]: the floor rule matches no metric of cand.json (benchmark 'colective', result "
      "'*', metric 'busbw_gbps'): it gates nothing");
}

// A value just past a floor, or a change just past the tolerance, is printed with the digits that show it
// past: "0.45 below floor 0.45" and "-5.0% beyond ±5%" read as contradictions.
TEST(Compare, NotesShowTheDigitsThatCrossTheBound) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("gemm/* tflops >= 0.45", "rules.json: $.rules[0]"));
  const auto base = report({result("gemm", "x", {{"tflops", metric(0.45, Better::higher)}})});
  const auto cand = report({result("gemm", "x", {{"tflops", metric(0.4499996, Better::higher)}})});
  const auto floor = compare_reports(base, cand, rules, "base.json", "cand.json");
  ASSERT_EQ(floor.rows.size(), 1u);
  EXPECT_EQ(floor.rows[0].reason, "0.4499996 below floor 0.45");
  const auto b100 = report({result("gemm", "x", {{"tflops", metric(100, Better::higher)}})});
  const auto c94 = report({result("gemm", "x", {{"tflops", metric(94.999, Better::higher)}})});
  const auto change = compare_reports(b100, c94, {}, "base.json", "cand.json");
  ASSERT_EQ(change.rows.size(), 1u);
  EXPECT_EQ(change.rows[0].verdict, Verdict::worse);
  EXPECT_EQ(change.rows[0].reason, "-5.001% beyond ±5% tolerance");
  // Far from the bound, the usual digits.
  const auto c90 = report({result("gemm", "x", {{"tflops", metric(90, Better::higher)}})});
  EXPECT_EQ(compare_reports(b100, c90, {}, "base.json", "cand.json").rows[0].reason,
            "-10.0% beyond ±5% tolerance");
}

// A comparison that judges nothing (every metric in common ignored) is refused: it passed as "0 metrics
// compared, gate: pass".
TEST(Compare, NothingToJudgeIsAnInputError) {
  CompareRules rules;
  MetricRule ignore;
  ignore.metric = "*";
  ignore.ignore = true;
  rules.rules.push_back(ignore);
  const auto r =
      report({result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(10, Better::higher)}})});
  try {
    (void)compare_reports(r, r, rules, "base.json", "cand.json");
    FAIL() << "compared nothing, and passed";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "cannot compare base.json with cand.json: nothing to judge: no metric of the 1 result(s) in common "
        "was compared (the rules ignore them)");
  }
}

// A floor after a rule that ignores the metric gates it again (it was dropped, and compare exited 0).
TEST(Compare, AFloorAfterAnIgnoreGatesTheMetric) {
  CompareRules rules;
  MetricRule ignore;
  ignore.benchmark = "gemm";
  ignore.metric = "mfu";
  ignore.ignore = true;
  ignore.where = "rules.json: $.rules[0]";
  rules.rules.push_back(ignore);
  rules.rules.push_back(parse_bound_rule("gemm/* mfu >= 0.5", "rules.json: $.rules[1]"));
  EXPECT_FALSE(rules.resolve("gemm", "fp32/64x64x64", "mfu").ignore);
  const auto base = report({result("gemm", "fp32/64x64x64", {{"mfu", metric(0.36, Better::higher)}})});
  const auto cmp = compare_reports(base, base, rules, "base.json", "cand.json");
  EXPECT_TRUE(cmp.warnings.empty());
  ASSERT_EQ(cmp.rows.size(), 1u);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);
  EXPECT_TRUE(cmp.rows[0].fails);
  // Without the floor, the metric stays ignored.
  rules.rules.pop_back();
  EXPECT_TRUE(rules.resolve("gemm", "fp32/64x64x64", "mfu").ignore);
}

// A floor on metrics that a later rule ignores gates nothing either: said, and the floor is not applied.
TEST(Compare, AFloorOverriddenByALaterIgnoreIsWarnedAbout) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("collective/* busbw_gbps >= 1000", "rules.json: $.rules[0]"));
  MetricRule ignore;
  ignore.metric = "busbw_gbps";
  ignore.ignore = true;
  ignore.where = "rules.json: $.rules[1]";
  rules.rules.push_back(ignore);
  const auto r = report(
      {result("collective", "allreduce/bf16/1024",
              {{"busbw_gbps", metric(10, Better::higher)}, {"algbw_gbps", metric(5, Better::higher)}})});
  const auto cmp = compare_reports(r, r, rules, "base.json", "cand.json");
  ASSERT_EQ(cmp.warnings.size(), 1u);
  EXPECT_EQ(
      cmp.warnings[0],
      "rules.json: $.rules[0]: the floor rule gates nothing: a later rule ignores every metric it matches "
      "(benchmark 'collective', result '*', metric 'busbw_gbps')");
  // Not said while one metric it matches is still gated.
  rules.rules[1].result = "allreduce/*";
  const auto two =
      report({result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(10, Better::higher)}}),
              result("collective", "allgather/bf16/1024", {{"busbw_gbps", metric(10, Better::higher)}})});
  EXPECT_TRUE(compare_reports(two, two, rules, "base.json", "cand.json").warnings.empty());
}

// Noise band = 2·sqrt(σb² + σc²)/|b|. σ = 5 on both sides of b = 100: 14.1%.
TEST(Compare, NoisyChangeBeyondToleranceIsAmbiguous) {
  const EffectiveRule rule{0.05, std::nullopt, std::nullopt, false};
  const auto v = judge_metric(metric(100, Better::higher, "GB/s", 5, 10),
                              metric(92, Better::higher, "GB/s", 5, 10), rule, 2.0, 0.10);
  EXPECT_EQ(v.verdict, Verdict::ambiguous);
  EXPECT_NEAR(*v.noise, 2 * std::sqrt(50.0) / 100, 1e-12);
}

TEST(Compare, ChangeWithinModestNoiseIsSame) {
  // Tolerance 0: only a change beyond the noise band counts. σ = 1: noise 2.83%.
  const EffectiveRule strict{0.0, std::nullopt, std::nullopt, false};
  const auto same = judge_metric(metric(100, Better::lower, "us", 1, 20),
                                 metric(102, Better::lower, "us", 1, 20), strict, 2.0, 0.10);
  EXPECT_EQ(same.verdict, Verdict::same);
  EXPECT_NE(same.reason.find("within noise"), std::string::npos);
  const auto worse = judge_metric(metric(100, Better::lower, "us", 1, 20),
                                  metric(104, Better::lower, "us", 1, 20), strict, 2.0, 0.10);
  EXPECT_EQ(worse.verdict, Verdict::worse);
}

TEST(Compare, ClearChangeBeyondNoiseIsDecided) {
  const EffectiveRule rule{0.05, std::nullopt, std::nullopt, false};
  const auto v = judge_metric(metric(100, Better::higher, "GB/s", 1, 10),
                              metric(120, Better::higher, "GB/s", 1, 10), rule, 2.0, 0.10);
  EXPECT_EQ(v.verdict, Verdict::better);
  // A single sample carries no spread: no noise band, the tolerance alone decides.
  const auto single = judge_metric(metric(100, Better::higher, "GB/s", 5, 1),
                                   metric(92, Better::higher, "GB/s", 5, 1), rule, 2.0, 0.10);
  EXPECT_FALSE(single.noise.has_value());
  EXPECT_EQ(single.verdict, Verdict::worse);
}

TEST(Compare, FloorOverridesRelativeVerdict) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("train/* mfu >= 0.45", "test"));
  const auto base =
      report({result("train", "llama3-8b", {{"mfu", metric(0.38, Better::higher, "fraction")}})});
  auto cand = report({result("train", "llama3-8b", {{"mfu", metric(0.41, Better::higher, "fraction")}})});
  auto cmp = compare_reports(base, cand, rules);
  ASSERT_EQ(cmp.rows.size(), 1u);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);  // 8% better than the baseline, yet below the floor
  EXPECT_EQ(cmp.rows[0].reason, "0.41 below floor 0.45");
  EXPECT_EQ(cmp.exit_status(), 1);

  cand.results[0].metrics[0].second.value = 0.47;
  cmp = compare_reports(base, cand, rules);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::better);
  EXPECT_NE(cmp.rows[0].reason.find("meets floor >= 0.45"), std::string::npos);
  EXPECT_EQ(cmp.exit_status(), 0);
}

TEST(Compare, CeilingOnLowerIsBetterMetric) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("step_time_s <= 2.5", "test"));
  const auto base = report({result("train", "x", {{"step_time_s", metric(2.6, Better::lower, "s")}})});
  const auto cand = report({result("train", "x", {{"step_time_s", metric(2.61, Better::lower, "s")}})});
  const auto cmp = compare_reports(base, cand, rules);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);
  EXPECT_EQ(cmp.rows[0].reason, "2.61 above ceiling 2.5");
}

TEST(Compare, FloorAppliesToNewResults) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("goodput_pct >= 90", "test"));
  const auto base = report({result("train", "x", {{"mfu", metric(0.4, Better::higher, "fraction")}})});
  const auto cand = report({result("train", "x", {{"mfu", metric(0.4, Better::higher, "fraction")}}),
                            result("resilience", "run", {{"goodput_pct", metric(85, Better::higher, "%")}})});
  const auto cmp = compare_reports(base, cand, rules);
  ASSERT_EQ(cmp.rows.size(), 2u);
  EXPECT_EQ(cmp.rows[1].verdict, Verdict::worse);
  EXPECT_EQ(cmp.exit_status(), 1);
}

TEST(Compare, MissingAndNew) {
  const auto base = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}}),
                            result("gemm", "b", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  const auto cand = report({result("gemm", "a",
                                   {{"tflops", metric(10, Better::higher, "TFLOP/s")},
                                    {"time_us", metric(5, Better::lower, "us")}}),
                            result("gemm", "c", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  auto cmp = compare_reports(base, cand, {});
  ASSERT_EQ(cmp.rows.size(), 4u);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::same);
  EXPECT_EQ(cmp.rows[1].verdict, Verdict::added);  // a/time_us: metric not in baseline
  EXPECT_EQ(cmp.rows[2].verdict, Verdict::missing);
  EXPECT_EQ(cmp.rows[2].result, "b");
  EXPECT_EQ(cmp.rows[3].verdict, Verdict::added);
  EXPECT_EQ(cmp.rows[3].result, "c");
  EXPECT_EQ(cmp.exit_status(), 0);
  EXPECT_EQ(cmp.summary_line(), "4 metrics compared: 1 SAME, 1 MISSING, 2 NEW");

  CompareRules strict;
  strict.fail_on_missing = true;
  cmp = compare_reports(base, cand, strict);
  EXPECT_TRUE(cmp.rows[2].fails);
  EXPECT_EQ(cmp.exit_status(), 1);
}

TEST(Compare, FailedCandidateResultFailsTheGate) {
  const auto base = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  auto cand = report({result("gemm", "a", {})});
  cand.results[0].fail("check failed: 3 elements differ");
  const auto cmp = compare_reports(base, cand, {});
  ASSERT_EQ(cmp.rows.size(), 1u);
  EXPECT_EQ(cmp.rows[0].metric, "status");
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);
  EXPECT_EQ(cmp.rows[0].reason, "failed in candidate: check failed: 3 elements differ");
}

TEST(Compare, FailedCandidateFailsTheGateEvenWhenTheBaselineFailedToo) {
  auto base = report({result("gemm", "a", {})});
  base.results[0].fail("check failed");
  auto cand = base;
  const auto cmp = compare_reports(base, cand, {});
  ASSERT_EQ(cmp.rows.size(), 1u);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);
  EXPECT_EQ(cmp.rows[0].reason, "failed in candidate (and in baseline): check failed");
  EXPECT_EQ(cmp.exit_status(), 1);
}

// A floor is absolute: leaving the metric out, or skipping the result, does not step around it.
TEST(Compare, AFloorWithoutACandidateValueFails) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("collective busbw_gbps >= 500", "test"));
  const auto base =
      report({result("collective", "allreduce/bf16/1024", {{"busbw_gbps", metric(600, Better::higher)}})});
  auto dropped = report({result("collective", "allreduce/bf16/1024", {})});
  auto cmp = compare_reports(base, dropped, rules);
  ASSERT_EQ(cmp.rows.size(), 1u);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);
  EXPECT_EQ(cmp.rows[0].reason, "metric not in candidate; no value to meet floor 500");
  EXPECT_EQ(cmp.exit_status(), 1);
  dropped.results[0].status = Status::skipped;
  EXPECT_EQ(compare_reports(base, dropped, rules).exit_status(), 1);
  // Without a floor, the same candidate judges nothing: its one result in common was skipped.
  EXPECT_THROW(compare_reports(base, dropped, {}), Error);
}

TEST(Compare, AResultGivenTwiceIsAnInputError) {
  const auto base = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  const auto cand = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}}),
                            result("gemm", "a", {{"tflops", metric(5, Better::higher, "TFLOP/s")}})});
  try {
    compare_reports(base, cand, {}, "base.json", "cand.json");
    FAIL() << "compared one copy of a duplicated result";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_EQ(std::string(e.what()),
              "cand.json: $.results[1]: result gemm/a is also $.results[0]: results are told apart by "
              "benchmark + name, which must be unique");
  }
  EXPECT_THROW(compare_reports(cand, base, {}), Error);
}

TEST(Compare, AChangeOfExactlyTheToleranceIsWithinIt) {
  // (435.575 - 458.5) / 458.5 is -0.05000000000000004 in doubles.
  for (const auto& [b, c] : {std::pair{458.5, 435.575}, {1.1, 1.045}, {0.3, 0.285}, {100.0, 95.0}})
    EXPECT_EQ(one(b, c, Better::higher).verdict, Verdict::same) << b << " -> " << c;
  EXPECT_EQ(one(458.5, 435.5, Better::higher).verdict, Verdict::worse);
}

TEST(Compare, SkippedCandidateResultIsMissing) {
  const auto base = report({result("gemm", "fp8", {{"tflops", metric(10, Better::higher, "TFLOP/s")}}),
                            result("gemm", "bf16", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  auto cand = report({result("gemm", "fp8", {}),
                      result("gemm", "bf16", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  cand.results[0].status = Status::skipped;
  cand.results[0].error = "fp8 needs the cuda backend";
  const auto cmp = compare_reports(base, cand, {});
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::missing);
  EXPECT_EQ(cmp.exit_status(), 0);
  // A candidate that skipped every result in common judged nothing: not a pass (it was exit 0).
  cand.results[1].status = Status::skipped;
  try {
    compare_reports(base, cand, {}, "base.json", "cand.json");
    FAIL() << "a candidate that skipped everything passed the gate";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_EQ(
        std::string(e.what()),
        "cannot compare base.json with cand.json: nothing to judge: no metric of the 2 result(s) in common "
        "was compared (the candidate skipped them) and the metrics of one report only gate nothing "
        "without a floor, a ceiling or --fail-on-missing");
  }
  // --fail-on-missing judges them: each fails.
  CompareRules strict;
  strict.fail_on_missing = true;
  EXPECT_EQ(compare_reports(base, cand, strict).exit_status(), 1);
}

// Every metric in common ignored, a result on one side only: the NEW (or MISSING) row judged nothing, and the
// gate passed having compared nothing.
TEST(Compare, IgnoredMetricsInCommonBesideANewResultJudgeNothing) {
  CompareRules rules;
  MetricRule ignore_x;
  ignore_x.result = "x";
  ignore_x.ignore = true;
  rules.rules.push_back(ignore_x);
  const auto base = report({result("gemm", "x", {{"t", metric(100, Better::lower, "us")}})});
  const auto cand = report({result("gemm", "x", {{"t", metric(100, Better::lower, "us")}}),
                            result("gemm", "y", {{"t", metric(1000, Better::lower, "us")}})});
  EXPECT_THROW(compare_reports(base, cand, rules), Error);
  EXPECT_THROW(compare_reports(cand, base, rules), Error);  // the extra result in the baseline: MISSING
  // A ceiling on the new result judges it.
  rules.rules.push_back(parse_bound_rule("gemm/y t <= 500", "test"));
  const auto gated = compare_reports(base, cand, rules);
  ASSERT_EQ(gated.rows.size(), 1u);
  EXPECT_EQ(gated.rows[0].verdict, Verdict::worse);
}

// A skipped result the baseline lacks carries no measurement: a ceiling finds no value (it was judged on the
// skipped result's figures and passed as NEW).
TEST(Compare, ASkippedNewResultHasNoValueForACeiling) {
  CompareRules rules;
  rules.rules.push_back(parse_bound_rule("gemm/y t <= 500", "test"));
  const auto base = report({result("gemm", "x", {{"t", metric(100, Better::lower, "us")}})});
  auto cand = report({result("gemm", "x", {{"t", metric(100, Better::lower, "us")}}),
                      result("gemm", "y", {{"t", metric(100, Better::lower, "us")}})});
  cand.results[1].status = Status::skipped;
  const auto cmp = compare_reports(base, cand, rules);
  ASSERT_EQ(cmp.rows.size(), 2u);
  EXPECT_EQ(cmp.rows[1].verdict, Verdict::worse);
  EXPECT_FALSE(cmp.rows[1].candidate.has_value());
  EXPECT_EQ(cmp.rows[1].reason, "result not in baseline; skipped in candidate; no value to meet ceiling 500");
  EXPECT_EQ(cmp.exit_status(), 1);
}

// The noise band from relative spreads: at 1e300 the squares overflowed (an infinite band let +8% pass as
// AMBIGUOUS), at 1e-200 they underflowed to no band.
TEST(Compare, NoiseBandHoldsAtExtremeMagnitudes) {
  for (const double scale : {1e300, 1e-200, 1.0}) {
    Metric b = metric(1 * scale, Better::lower, "us"), c = metric(1.08 * scale, Better::lower, "us");
    b.stats = SampleStats{0.9 * scale, scale, 1.1 * scale, scale, 1.1 * scale, 0.02 * scale, 10};
    c.stats =
        SampleStats{0.9 * scale, 1.08 * scale, 1.2 * scale, 1.08 * scale, 1.2 * scale, 0.02 * scale, 10};
    const auto v = judge_metric(b, c, EffectiveRule{}, 2.0, 0.10);
    ASSERT_TRUE(v.noise.has_value()) << scale;
    EXPECT_NEAR(*v.noise, 2 * std::sqrt(2.0) * 0.02, 1e-12) << scale;
    EXPECT_EQ(v.verdict, Verdict::worse) << scale;
  }
}

TEST(Compare, IgnoreRuleDropsMetric) {
  CompareRules rules;
  MetricRule r;
  r.metric = "time_*";
  r.ignore = true;
  rules.rules.push_back(r);
  const auto base = report({result(
      "gemm", "a",
      {{"time_us", metric(1, Better::lower, "us")}, {"tflops", metric(1, Better::higher, "TFLOP/s")}})});
  const auto cmp = compare_reports(base, base, rules);
  ASSERT_EQ(cmp.rows.size(), 1u);
  EXPECT_EQ(cmp.rows[0].metric, "tflops");
}

TEST(Compare, WarningsForDifferentRuns) {
  const auto base =
      report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})}, "cuda", 8);
  auto cand = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})}, "host", 4);
  cand.schema = "factorybench.report/v2";
  const auto cmp = compare_reports(base, cand, {});
  ASSERT_EQ(cmp.warnings.size(), 3u);
  EXPECT_EQ(cmp.warnings[0],
            "schema versions differ: baseline factorybench.report/v1, candidate factorybench.report/v2");
  EXPECT_EQ(cmp.warnings[1], "backends differ: baseline cuda, candidate host");
  EXPECT_EQ(cmp.warnings[2], "world sizes differ: baseline 8, candidate 4");
}

TEST(Compare, IncompatibleUnitsNameTheJsonPath) {
  const auto base = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  const auto cand = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "GFLOP/s")}})});
  try {
    compare_reports(base, cand, {}, "base.json", "cand.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_EQ(std::string(e.what()),
              "cand.json: $.results[0].metrics.tflops.unit: \"GFLOP/s\" but the baseline (base.json) has "
              "\"TFLOP/s\": "
              "the reports are incompatible");
  }
}

TEST(Compare, OppositeDirectionsAreIncompatible) {
  const auto base = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  const auto cand = report({result("gemm", "a", {{"tflops", metric(10, Better::lower, "TFLOP/s")}})});
  try {
    compare_reports(base, cand, {}, "base.json", "cand.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cand.json: $.results[0].metrics.tflops.better: \"lower\" but the baseline (base.json) has "
              "\"higher\": the reports are incompatible");
  }
}

// A censored MTTF (no failure) has no direction; the same metric with failures is higher-is-better. Either
// way round the row is shown, not judged, and said once per metric.
TEST(Compare, DirectionOnOneSideOnlyIsInfoWithAWarning) {
  const auto judged = [](double v) { return metric(v, Better::higher, "s"); };
  const auto open = [](double v) { return metric(v, Better::none, "s"); };
  const auto base = report(
      {result("resilience", "a", {{"mttf_s", judged(100)}, {"goodput_pct", metric(90, Better::higher, "%")}}),
       result("resilience", "b",
              {{"mttf_s", judged(100)}, {"goodput_pct", metric(90, Better::higher, "%")}})});
  const auto cand = report(
      {result("resilience", "a", {{"mttf_s", open(10)}, {"goodput_pct", metric(90, Better::higher, "%")}}),
       result("resilience", "b", {{"mttf_s", open(10)}, {"goodput_pct", metric(90, Better::higher, "%")}})});
  for (const bool swapped : {false, true}) {
    const auto cmp = swapped ? compare_reports(cand, base, {}) : compare_reports(base, cand, {});
    ASSERT_EQ(cmp.warnings.size(), 1u);
    EXPECT_EQ(cmp.warnings[0], swapped
                                   ? "resilience mttf_s: the candidate says higher is better, the baseline "
                                     "gives it no direction: compared, not judged"
                                   : "resilience mttf_s: the baseline says higher is better, the candidate "
                                     "gives it no direction: compared, not judged");
    int info = 0;
    for (const auto& row : cmp.rows)
      if (row.metric == "mttf_s") {
        EXPECT_EQ(row.verdict, Verdict::info);
        EXPECT_EQ(row.better, Better::none);
        EXPECT_EQ(row.reason, swapped ? "a direction in the candidate only (higher is better): not judged"
                                      : "a direction in the baseline only (higher is better): not judged");
        EXPECT_FALSE(row.fails);
        ++info;
      }
    EXPECT_EQ(info, 2);
    EXPECT_EQ(cmp.exit_status(), 0);
  }
}

// Some names leave out part of what defines the work: differing defining parameters are said, in one
// warning (the first result and up to three of them), without changing any verdict.
TEST(Compare, DifferingWorkParametersAreWarnedOnce) {
  const auto sim = [](double days, double checkpoint_s) {
    auto r =
        result("simulate", "llama3-h100/16384gpus/daly", {{"goodput_pct", metric(85, Better::higher, "%")}});
    r.params = {{"days", days},
                {"work_days", nullptr},
                {"checkpoint_s", checkpoint_s},
                {"failure_model_file", "/a/llama3-h100.json"},
                {"expected_failures", 419.0 * days / 54},
                {"trials", 50},
                {"seed", 42},
                {"spares", "unlimited"}};
    return r;
  };
  const auto gemm = [](const std::string& algo) {
    auto r = result("gemm", "fp32/64", {{"tflops", metric(2, Better::higher, "TFLOP/s")}});
    r.params = {{"m", 64}, {"algo", algo}};
    return r;
  };
  const auto base = report({sim(54, 60), gemm("a")});
  const auto cmp = compare_reports(base, report({sim(0.01, 10), gemm("b")}), {});
  ASSERT_EQ(cmp.warnings.size(), 1u);
  EXPECT_EQ(
      cmp.warnings[0],
      "parameters differ in 1 of the 2 result(s) in common (simulate llama3-h100/16384gpus/daly: days 54.0 "
      "-> 0.01, checkpoint_s 60.0 -> 10.0): their figures may not measure the same work");
  EXPECT_EQ(cmp.count(Verdict::same), 2u);  // said, not judged
  // What a run computes or chooses (the expected failures, an algorithm), paths and parameters of one report
  // only are not the work; integers equal doubles of one value.
  auto same = sim(54, 60);
  same.params["expected_failures"] = 1;
  same.params["failure_model_file"] = "/b.json";
  same.params["trials"] = 50.0;
  same.params["gpus_per_node"] = 4;
  EXPECT_TRUE(compare_reports(base, report({same, gemm("c")}), {}).warnings.empty());
  // Exact: 64-bit seeds one apart, and doubles one digit apart, in full.
  auto near = sim(54, 3600.0001);
  near.params["seed"] = 9007199254740993ull;
  auto nearer = sim(54, 3600.0002);
  nearer.params["seed"] = 9007199254740992ull;
  const auto exact = compare_reports(report({near}), report({nearer}), {});
  ASSERT_EQ(exact.warnings.size(), 1u);
  EXPECT_EQ(
      exact.warnings[0],
      "parameters differ in 1 of the 1 result(s) in common (simulate llama3-h100/16384gpus/daly: "
      "checkpoint_s "
      "3600.0001 -> 3600.0002, seed 9007199254740993 -> 9007199254740992): their figures may not measure "
      "the same work");
  // With --work-days, `days` is the mean time the trials took: an outcome, not the window.
  auto work = sim(20, 60), longer = sim(25, 60);
  work.params["work_days"] = longer.params["work_days"] = 10;
  EXPECT_TRUE(compare_reports(report({work}), report({longer}), {}).warnings.empty());
  // Four differences: three shown and how many more; with two results differing, the first is named.
  auto four = sim(0.01, 10);
  four.params["trials"] = 5;
  four.params["seed"] = 7;
  auto job = result("resilience", "tiny-dense/ranks1/policy-none",
                    {{"goodput_pct", metric(90, Better::higher, "%")}});
  job.params = {{"train_options", ""}, {"run_dir", "/a"}};
  auto seq = job;
  seq.params = {{"train_options", "--seq 64"}, {"run_dir", "/b"}};
  const auto both = compare_reports(report({sim(54, 60), job}), report({four, seq}), {});
  ASSERT_EQ(both.warnings.size(), 1u);
  EXPECT_EQ(
      both.warnings[0],
      "parameters differ in 2 of the 2 result(s) in common (first: simulate llama3-h100/16384gpus/daly: "
      "days 54.0 -> 0.01, checkpoint_s 60.0 -> 10.0, trials 50 -> 5 and 1 more): their figures may not "
      "measure the same work");
  const auto resilience = compare_reports(report({job}), report({seq}), {});
  ASSERT_EQ(resilience.warnings.size(), 1u);
  EXPECT_NE(resilience.warnings[0].find("train_options \"\" -> \"--seq 64\")"), std::string::npos);
}

TEST(Compare, NothingInCommonIsAnError) {
  const auto base = report({result("gemm", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  const auto cand = report({result("collective", "a", {{"tflops", metric(10, Better::higher, "TFLOP/s")}})});
  EXPECT_THROW(compare_reports(base, cand, {}), Error);
}

TEST(Compare, MalformedReportNamesTheJsonPath) {
  nlohmann::json j =
      to_json(report({result("collective", "x", {{"busbw_gbps", metric(1, Better::higher)}})}));
  j["results"][0]["metrics"]["busbw_gbps"]["value"] = "fast";
  try {
    report_from_json(j, "cand.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cand.json: $.results[0].metrics.busbw_gbps.value: expected a number");
  }
}

TEST(Compare, ResultsMatchRegardlessOfOrder) {
  const auto base = report({result("c", "1", {{"x", metric(1, Better::higher)}}),
                            result("c", "2", {{"x", metric(2, Better::higher)}})});
  const auto cand = report({result("c", "2", {{"x", metric(2, Better::higher)}}),
                            result("c", "1", {{"x", metric(0.5, Better::higher)}})});
  const auto cmp = compare_reports(base, cand, {});
  ASSERT_EQ(cmp.rows.size(), 2u);
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse);
  EXPECT_EQ(cmp.rows[1].verdict, Verdict::same);
}

TEST(Compare, ReferenceBaselineIsLabelled) {
  auto base = report({result("c", "1", {{"x", metric(480, Better::higher)}})});
  base.summary = {{"kind", "reference"}, {"title", "8x H200 SXM"}};
  const auto side = describe_side(base, "h200.json");
  EXPECT_TRUE(side.reference);
  EXPECT_EQ(side.label, "published reference: 8x H200 SXM");
  // summary is open: a hand-edited kind or title of another type reads as absent (it escaped as an internal
  // error).
  base.summary = {{"kind", 5}};
  EXPECT_FALSE(describe_side(base, "h200.json").reference);
  base.summary = {{"kind", "reference"}, {"title", 7}};
  EXPECT_EQ(describe_side(base, "h200.json").label, "published reference: (untitled)");
}

// A floor written against our own result's name gates it also when it is compared with a published reference
// matched by pattern (the rules were resolved under the reference's name only, and the floor was dropped);
// one written against the reference's name gates it too, without a warning that it gates nothing.
TEST(Compare, RulesApplyUnderEitherNameOfAReferencePair) {
  Result ref = result("train", "llama3-8b/nemo-24.07/fp8",
                      {{"model_tflops_per_gpu", metric(697, Better::higher, "TFLOP/s")}});
  ref.params = {{"match", "llama3-8b*/*/fp8/*"}};
  const auto base = report({ref});
  const auto cand = report({result("train", "llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1",
                                   {{"model_tflops_per_gpu", metric(690, Better::higher, "TFLOP/s")}})});
  for (const char* rule : {"train/llama3-8b/tp1* model_tflops_per_gpu >= 700",
                           "train/llama3-8b/nemo* model_tflops_per_gpu >= 700"}) {
    CompareRules rules;
    rules.rules.push_back(parse_bound_rule(rule, "test"));
    const auto cmp = compare_reports(base, cand, rules);
    ASSERT_EQ(cmp.rows.size(), 1u) << rule;
    EXPECT_EQ(cmp.rows[0].verdict, Verdict::worse) << rule;
    EXPECT_EQ(cmp.rows[0].reason, "690 below floor 700") << rule;
    EXPECT_TRUE(cmp.warnings.empty()) << rule << ": " << (cmp.warnings.empty() ? "" : cmp.warnings[0]);
  }
}

TEST(Compare, ReferenceMatchesOurResultsByPattern) {
  // A published NeMo figure stands for any llama3-8b fp8 run of ours, whatever its layout; two runs match.
  Result ref = result("train", "llama3-8b/nemo-24.07/fp8",
                      {{"model_tflops_per_gpu", metric(697, Better::higher, "TFLOP/s")}});
  ref.params = {{"match", "llama3-8b*/*/fp8/*"}};
  const auto base =
      report({ref, result("gemm", "bf16/mamf", {{"tflops", metric(700, Better::higher, "TFLOP/s")}})});
  const auto cand =
      report({result("train", "llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1",
                     {{"model_tflops_per_gpu", metric(710, Better::higher, "TFLOP/s")}}),
              result("train", "llama3-8b-4layers/tp1-dp1-ep1-pp1/fp8/seq8192-mb1-ga1",
                     {{"model_tflops_per_gpu", metric(500, Better::higher, "TFLOP/s")}}),
              result("train", "llama3-8b/tp1-dp8-ep1-pp1/bf16/seq8192-mb1-ga1",
                     {{"model_tflops_per_gpu", metric(600, Better::higher, "TFLOP/s")}}),
              result("gemm", "bf16/mamf", {{"tflops", metric(690, Better::higher, "TFLOP/s")}})});
  const auto cmp = compare_reports(base, cand, {});
  std::map<std::string, Verdict> got;
  for (const auto& row : cmp.rows) got[row.result] = row.verdict;
  EXPECT_EQ(got.at("llama3-8b/nemo-24.07/fp8 ~ llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1"),
            Verdict::same);
  EXPECT_EQ(got.at("llama3-8b/nemo-24.07/fp8 ~ llama3-8b-4layers/tp1-dp1-ep1-pp1/fp8/seq8192-mb1-ga1"),
            Verdict::worse);
  EXPECT_EQ(got.at("llama3-8b/tp1-dp8-ep1-pp1/bf16/seq8192-mb1-ga1"),
            Verdict::added);  // bf16: not the fp8 figure
  EXPECT_EQ(got.at("bf16/mamf"), Verdict::same);
  EXPECT_EQ(cmp.rows.size(), 4u);

  // Without a pattern the reference result is simply missing from our run.
  Result plain = ref;
  plain.params = nlohmann::json::object();
  const auto cmp2 = compare_reports(report({plain, base.results[1]}), cand, {});
  for (const auto& row : cmp2.rows) {
    if (row.result == "llama3-8b/nemo-24.07/fp8") {
      EXPECT_EQ(row.verdict, Verdict::missing);
    }
  }
}

TEST(Compare, ReferenceMatchParamsMustAgree) {
  // NeMo's 697 TFLOP/s for Llama 3 8B is 12036 tokens/s x the full-attention 57.91 GFLOP per token; a run
  // that counts causal attention (51.47) would read 11% slower for the same speed, so it is not compared.
  Result ref = result("train", "llama3-8b/nemo-24.07/fp8",
                      {{"model_tflops_per_gpu", metric(697, Better::higher, "TFLOP/s")}});
  ref.params = {{"match", "llama3-8b*/*/fp8/*"}, {"match_params", {{"attention_flops", "full"}}}};
  Result causal = result("train", "llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1",
                         {{"model_tflops_per_gpu", metric(619.5, Better::higher, "TFLOP/s")}});
  causal.params = {{"attention_flops", "causal"}};
  const Result mamf = result("gemm", "bf16/mamf", {{"tflops", metric(700, Better::higher, "TFLOP/s")}});
  const auto cmp = compare_reports(report({ref, mamf}), report({causal, mamf}), {});
  ASSERT_EQ(cmp.rows.size(), 3u);
  EXPECT_EQ(cmp.rows[0].result, "llama3-8b/nemo-24.07/fp8");
  EXPECT_EQ(cmp.rows[0].verdict, Verdict::missing);
  EXPECT_EQ(cmp.rows[0].reason,
            "not comparable: llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1 has params.attention_flops "
            "\"causal\" where the reference needs \"full\"");
  EXPECT_FALSE(cmp.rows[0].fails);
  // The same candidate is NEW, saying which reference it was not comparable with.
  const auto causal_row = std::find_if(cmp.rows.begin(), cmp.rows.end(), [](const MetricComparison& r) {
    return r.result == "llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1";
  });
  ASSERT_NE(causal_row, cmp.rows.end());
  EXPECT_EQ(causal_row->verdict, Verdict::added);
  EXPECT_EQ(causal_row->reason,
            "not comparable with the reference llama3-8b/nemo-24.07/fp8: llama3-8b/tp1-dp8-ep1-pp1/fp8/"
            "seq8192-mb1-ga1 has params.attention_flops \"causal\" where the reference needs \"full\"");
  // With nothing else in common the error says why the one candidate was not compared.
  try {
    (void)compare_reports(report({ref}), report({causal}), {});
    ADD_FAILURE() << "expected no result in common";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("; not comparable: llama3-8b/nemo-24.07/fp8: llama3-8b/tp1-dp8-ep1-pp1/"
                                   "fp8/seq8192-mb1-ga1 has params.attention_flops \"causal\""),
        std::string::npos)
        << e.what();
  }

  Result full = causal;
  full.params = {{"attention_flops", "full"}};
  full.metrics = {{"model_tflops_per_gpu", metric(697.0, Better::higher, "TFLOP/s")}};
  const auto cmp2 = compare_reports(report({ref}), report({full}), {});
  ASSERT_EQ(cmp2.rows.size(), 1u);
  EXPECT_EQ(cmp2.rows[0].verdict, Verdict::same);
  EXPECT_EQ(cmp2.rows[0].result, "llama3-8b/nemo-24.07/fp8 ~ llama3-8b/tp1-dp8-ep1-pp1/fp8/seq8192-mb1-ga1");
}

TEST(CompareFormatting, Numbers) {
  EXPECT_EQ(format_value(482.3), "482.3");
  EXPECT_EQ(format_value(0.45231), "0.4523");
  EXPECT_EQ(format_value(17179869184.0), "17179869184");
  EXPECT_EQ(format_value(1234.567), "1234.6");
  EXPECT_EQ(format_value(20676247440850944.0), "2.06762e+16");  // every digit used to be printed
  EXPECT_EQ(format_value(1e308), "1e+308");
  EXPECT_EQ(format_change(-0.025), "-2.5%");
  EXPECT_EQ(format_change(0.0), "+0.0%");
  EXPECT_EQ(format_ratio(0.97512), "0.975");
  // 1e308 against 11: a ratio of 309 digits and a change of "+inf%" before.
  EXPECT_EQ(format_ratio(1e308 / 11.03), "9.07e+306");
  EXPECT_EQ(format_ratio(2e-5), "2e-05");
  EXPECT_EQ(format_ratio(0.0), "0.000");
  EXPECT_EQ(format_change(1e308 / 11.03), "+inf");
  EXPECT_EQ(format_change(12345.0), "+1.23e+06%");
  EXPECT_EQ(format_change(-0.99999), "-100.0%");
}

TEST(CompareRulesTest, Glob) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("allreduce/*", "allreduce/bf16/1024"));
  EXPECT_TRUE(glob_match("*/bf16/*", "allreduce/bf16/1024"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
  EXPECT_FALSE(glob_match("allreduce/*", "allgather/bf16/1024"));
  EXPECT_TRUE(glob_match("*_us", "time_us"));
  EXPECT_FALSE(glob_match("*_us", "time_us_x"));
  EXPECT_TRUE(glob_match("a*b*c", "aXbYbZc"));
}

TEST(CompareRulesTest, Tolerance) {
  EXPECT_DOUBLE_EQ(parse_tolerance("5%", "--tolerance"), 0.05);
  EXPECT_DOUBLE_EQ(parse_tolerance("0.05", "--tolerance"), 0.05);
  EXPECT_DOUBLE_EQ(parse_tolerance(" 2.5 % ", "--tolerance"), 0.025);
  EXPECT_THROW(parse_tolerance("-1%", "--tolerance"), Error);
  EXPECT_THROW(parse_tolerance("five", "--tolerance"), Error);
  // A plain number is a fraction; one above 1 is a typo for a percentage, not a 500% tolerance.
  EXPECT_DOUBLE_EQ(parse_tolerance("1", "--tolerance"), 1.0);
  EXPECT_DOUBLE_EQ(parse_tolerance("500%", "--tolerance"), 5.0);
  try {
    parse_tolerance("5", "--tolerance");
    ADD_FAILURE() << "5 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "invalid --tolerance '5': a plain number is a fraction (0.05 = 5%); write 5% for a percentage");
  }
  try {
    parse_tolerance("abc", "--tolerance");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("invalid --tolerance 'abc'"), std::string::npos);
  }
}

TEST(CompareRulesTest, ParseAndResolveInOrder) {
  const auto j = nlohmann::json::parse(R"({
    "tolerance": "5%", "max_noise": 0.2, "fail_on_missing": true,
    "rules": [
      {"benchmark": "collective", "metric": "busbw_gbps", "tolerance": "3%"},
      {"benchmark": "collective", "result": "allreduce/*/1024", "metric": "busbw_gbps", "tolerance": 0.5},
      "train/llama* mfu >= 0.45",
      "goodput_pct >= 90",
      {"metric": "time_us", "ignore": true},
      {"benchmark": "resilience", "metric": "ckpt_*_s", "abs_tolerance": 0.05}
    ]})");
  const auto rules = compare_rules_from_json(j, "rules.json");
  EXPECT_DOUBLE_EQ(rules.tolerance, 0.05);
  EXPECT_DOUBLE_EQ(rules.max_noise, 0.2);
  EXPECT_TRUE(rules.fail_on_missing);
  EXPECT_DOUBLE_EQ(rules.resolve("collective", "allreduce/bf16/2048", "busbw_gbps").tolerance, 0.03);
  EXPECT_DOUBLE_EQ(rules.resolve("collective", "allreduce/bf16/1024", "busbw_gbps").tolerance, 0.5);
  EXPECT_DOUBLE_EQ(rules.resolve("collective", "allreduce/bf16/1024", "algbw_gbps").tolerance, 0.05);
  EXPECT_DOUBLE_EQ(*rules.resolve("train", "llama3-8b", "mfu").min, 0.45);
  EXPECT_FALSE(rules.resolve("train", "gpt3", "mfu").min.has_value());
  EXPECT_DOUBLE_EQ(*rules.resolve("resilience", "x", "goodput_pct").min, 90);
  EXPECT_TRUE(rules.resolve("gemm", "x", "time_us").ignore);
  EXPECT_DOUBLE_EQ(*rules.resolve("resilience", "x", "ckpt_restore_s").abs_tolerance, 0.05);
  EXPECT_DOUBLE_EQ(rules.resolve("resilience", "x", "ckpt_restore_s").tolerance, 0.05);
  EXPECT_FALSE(rules.resolve("resilience", "x", "mttr_s").abs_tolerance.has_value());
}

void expect_rules_error(const char* text, const std::string& message) {
  try {
    compare_rules_from_json(nlohmann::json::parse(text), "rules.json");
    FAIL() << "expected an error for " << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(CompareRulesTest, ErrorsNameTheJsonPath) {
  expect_rules_error(R"({"rules": [{"metric": "mfu", "min": 0.4}, {"metric": "mfu", "min": "high"}]})",
                     "rules.json: $.rules[1].min: expected a number");
  expect_rules_error(
      R"({"tolerance": "lots"})",
      "rules.json: invalid $.tolerance 'lots': expected a percentage like 5% or a fraction like 0.05 "
      "(0 to 1000%)");
  expect_rules_error(
      R"({"rules": [{"metric": "mfu", "minimum": 0.4}]})",
      "rules.json: $.rules[0].minimum: unknown rule field (known: benchmark, result, metric, tolerance, "
      "abs_tolerance, min, max, ignore)");
  expect_rules_error(
      R"({"rules": [{"metric": "mfu"}]})",
      "rules.json: $.rules[0]: a rule needs at least one of tolerance, abs_tolerance, min, max or "
      "ignore");
  expect_rules_error(R"({"rules": [{"metric": "ckpt_restore_s", "abs_tolerance": "5ms"}]})",
                     "rules.json: $.rules[0].abs_tolerance: expected a number");
  expect_rules_error(
      R"({"rules": [{"metric": "ckpt_restore_s", "abs_tolerance": -0.1}]})",
      "rules.json: $.rules[0].abs_tolerance: expected a non-negative number in the metric's unit, got -0.1");
  expect_rules_error(
      R"({"rules": [{"metric": "ettr", "ignore": true, "min": 2}]})",
      "rules.json: $.rules[0]: a rule cannot both ignore a metric and set its min (ignore leaves "
      "it out of the gate)");
  expect_rules_error(
      R"({"rules": [{"metric": "mfu", "ignore": true, "tolerance": "5%"}]})",
      "rules.json: $.rules[0]: a rule cannot both ignore a metric and set its tolerance (ignore "
      "leaves it out of the gate)");
  expect_rules_error(R"({"rules": [{"metric": "mfu", "ignore": true, "abs_tolerance": 0.1}]})",
                     "rules.json: $.rules[0]: a rule cannot both ignore a metric and set its abs_tolerance "
                     "(ignore leaves it out of the gate)");
  expect_rules_error(
      R"({"rules": ["mfu > 0.4"]})",
      "rules.json: $.rules[0]: unknown comparison '>' in \"mfu > 0.4\" (expected \"[BENCHMARK/RESULT] "
      "METRIC >= NUMBER\" or \"... <= NUMBER\")");
  expect_rules_error(R"({"rules": 3})", "rules.json: $.rules: expected an array of rule objects or strings");
  expect_rules_error(R"({"tolerence": 0.1})",
                     "rules.json: $.tolerence: unknown field (known: tolerance, noise_sigmas, max_noise, "
                     "fail_on_missing, rules, description)");
  expect_rules_error(
      R"({"noise_sigmas": 1e6})",
      "rules.json: $.noise_sigmas: expected a number of standard deviations in [0, 10], got 1e+06");
  expect_rules_error(
      R"({"noise_sigmas": -1})",
      "rules.json: $.noise_sigmas: expected a number of standard deviations in [0, 10], got -1");
  expect_rules_error(R"([1])", "rules.json: $: expected an object");
  expect_rules_error(R"({"tolerance": 5})",
                     "rules.json: $.tolerance: expected a fraction in [0, 1] (or a string like \"5%\", up to "
                     "\"1000%\"), got 5");
}

}  // namespace
}  // namespace fb::reports
