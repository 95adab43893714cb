// The one-line-per-step summary: which figure heads each step, how steps are grouped and the verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "reports/headline.hpp"
#include "reports/report_printers.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {
namespace {

Result result(std::string benchmark, std::string name, std::string step,
              std::vector<std::pair<std::string, Metric>> metrics) {
  Result r;
  r.benchmark = std::move(benchmark);
  r.name = std::move(name);
  r.metrics = std::move(metrics);
  if (!step.empty()) r.extra["suite_step"] = step;
  return r;
}

Metric m(double value, std::string unit) {
  return Metric{value, std::move(unit), Better::higher, {}};
}

Report suite_report() {
  Report rep;
  rep.results.push_back(result("gemm", "bf16/4096x4096x4096", "gemm",
                               {{"tflops", m(610.5, "TFLOP/s")}, {"mfu", m(0.617, "fraction")}}));
  rep.results.push_back(result("gemm", "bf16/8192x8192x8192", "gemm",
                               {{"tflops", m(701.6, "TFLOP/s")}, {"mfu", m(0.709, "fraction")}}));
  rep.results.push_back(
      result("collective", "allreduce/bf16/1048576", "collectives", {{"busbw_gbps", m(120.25, "GB/s")}}));
  rep.results.push_back(
      result("collective", "allreduce/bf16/8388608", "collectives", {{"busbw_gbps", m(350.5, "GB/s")}}));
  // The average row is not a measured size: it never heads the step even when larger.
  rep.results.push_back(result("collective", "avg_busbw", "collectives", {{"busbw_gbps", m(999, "GB/s")}}));
  rep.results.push_back(result("train", "llama3-8b/tp1/bf16", "train",
                               {{"step_time_s", m(0.177, "s")}, {"mfu", m(0.429, "fraction")}}));
  Result res = result("resilience", "tiny-dense/ranks4", "resilience",
                      {{"goodput_pct", m(81.25, "%")},
                       {"ettr", m(0.9, "fraction")},
                       {"failures", m(2, "count")},
                       {"mttf_s", m(11124, "s")}});
  rep.results.push_back(res);
  return rep;
}

TEST(HeadlineTest, EachStepIsHeadedByItsRuleFigure) {
  const auto lines = headlines(suite_report());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].step, "gemm");
  EXPECT_EQ(lines[0].figure, "peak 701.6 TFLOP/s (bf16/8192x8192x8192), MFU 70.9%");
  EXPECT_EQ(lines[1].step, "collectives");
  EXPECT_EQ(lines[1].figure, "peak busbw 350.5 GB/s (allreduce/bf16/8388608)");
  EXPECT_EQ(lines[2].figure, "MFU 42.9% (llama3-8b/tp1/bf16), step 177 ms");
  // Times in the unit that reads at a glance: a step in ms, an MTTF of 11124 s in hours.
  EXPECT_EQ(lines[3].figure, "goodput 81.2% (tiny-dense/ranks4), ETTR 90.0%, failures 2, MTTF 3.09 h");
  for (const auto& h : lines) EXPECT_EQ(h.verdict, "ok") << h.step;
}

// A null figure (NaN) heads nothing: first in the list it used to win and print "peak n/a".
TEST(HeadlineTest, ANullFigureNeverHeadsTheStep) {
  Report rep;
  rep.results.push_back(result("gemm", "fp32/128x128x128", "", {{"tflops", m(std::nan(""), "TFLOP/s")}}));
  rep.results.push_back(result("gemm", "fp32/256x128x128", "", {{"tflops", m(0.077, "TFLOP/s")}}));
  const auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].figure.rfind("peak 0.077 TFLOP/s (fp32/256x128x128)", 0), 0u) << lines[0].figure;
}

// Names come from reports: a newline or an escape sequence in one can neither split the summary's line nor
// reach the terminal.
TEST(HeadlineTest, ControlCharactersInNamesStayOnTheirLine) {
  Report rep;
  rep.results.push_back(result("gemm", "fp32/64\nfake line\x1b[31m", "step\r\x1b]0;title\x07",
                               {{"tflops", m(1.5, "TFLOP/s")}}));
  const std::string out = render_headlines(headlines(rep));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(terminal_text("a\xc2\x9b"
                          "1mb \xc3\xa9"),
            "a 1mb \xc3\xa9");  // C1 CSI goes, é stays
}

TEST(HeadlineTest, AFailedResultFailsItsStepWithTheFirstReason) {
  Report rep = suite_report();
  rep.results[2].fail("wrong elements: 3");
  rep.results[3].fail("wrong elements: 5");
  const auto lines = headlines(rep);
  EXPECT_EQ(lines[1].verdict, "FAILED");
  EXPECT_EQ(lines[1].failed, 2u);
  EXPECT_EQ(lines[1].results, 3u);
  EXPECT_EQ(lines[1].reason, "allreduce/bf16/1048576: wrong elements: 3");
  EXPECT_EQ(lines[0].verdict, "ok");
  const std::string text = render_headlines(lines);
  EXPECT_NE(text.find("[2 of 3 failed: allreduce/bf16/1048576: wrong elements: 3]"), std::string::npos)
      << text;
}

// A failed run still shows its rule's figure (a failed resilience run's goodput, not its alphabetically
// first metric, ckpt_restore_s), beside the verdict.
TEST(HeadlineTest, AFailedRunIsHeadedByItsRuleFigureToo) {
  Report rep;
  rep.results.push_back(result("resilience", "tiny-dense/ranks1", "",
                               {{"ckpt_restore_s", m(1.884e-05, "s")},
                                {"goodput_pct", m(41.5, "%")},
                                {"ettr", m(0.5, "fraction")},
                                {"failures", m(1, "count")}}));
  rep.results[0].fail("the job did not complete: restarts exhausted");
  const auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].verdict, "FAILED");
  EXPECT_EQ(lines[0].figure, "goodput 41.5% (tiny-dense/ranks1), ETTR 50.0%, failures 1");
}

// A train result without MFU (no peak known for its dtype) says so and shows its step time, rather than its
// FLOP count, a constant of the model, standing in for a measurement; a dry run says it is a plan.
TEST(HeadlineTest, AMissingFigureIsSaidAndADryRunIsAPlan) {
  Report rep;
  rep.results.push_back(result(
      "train", "tiny-dense/tp2", "",
      {{"flops_per_step", m(3.02e8, "FLOP")}, {"step_time_s", m(0.05, "s")}, {"loss", m(6.9, "value")}}));
  ASSERT_EQ(headlines(rep).size(), 1u);
  EXPECT_EQ(headlines(rep)[0].figure, "MFU n/a (tiny-dense/tp2), step 50 ms, loss 6.9");
  rep.results[0].metrics = {{"flops_per_step", m(2.089e16, "FLOP")}, {"params_total", m(4.7e10, "count")}};
  rep.results[0].params["dry_run"] = true;
  EXPECT_EQ(headlines(rep)[0].figure, "dry run, planned flops_per_step 2.089e+16 FLOP (tiny-dense/tp2)");
  // The rule that says what is missing is the result's own: an MLPerf run (not its score) lacks its time.
  Report mlperf;
  mlperf.results.push_back(
      result("mlperf", "llama2_70b_lora/run1", "", {{"throughput_samples_per_s", m(12.5, "samples/s")}}));
  EXPECT_EQ(headlines(mlperf)[0].figure, "time to train n/a (llama2_70b_lora/run1)");
  // A health step of checks without a GEMM has no "slowest GEMM" to miss: its first metric stands.
  Report health;
  health.results.push_back(result("health", "memory/rank0", "", {{"free_bytes", m(8e10, "B")}}));
  EXPECT_EQ(headlines(health)[0].figure, "free_bytes 8e+10 B (memory/rank0)");
}

TEST(HeadlineTest, OutsideASuiteStepsAreBenchmarksAndUnknownKindsShowTheirFirstMetric) {
  Report rep;
  rep.results.push_back(result("health", "rank0/gemm", "", {{"fraction_of_expected", m(0.93, "fraction")}}));
  rep.results.push_back(result("health", "rank1/gemm", "", {{"fraction_of_expected", m(0.91, "fraction")}}));
  const auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].step, "health");
  EXPECT_EQ(lines[0].figure, "fraction_of_expected 93.0% (rank0/gemm)");
}

TEST(HeadlineTest, HealthBurninAndLocateHaveRulesAndTheFallbackIgnoresMetricOrder) {
  // A live report lists metrics as they were set, one read back from JSON sorted by name: the suite's own
  // closing lines and `report --format summary` printed different figures for these steps.
  Report rep;
  rep.results.push_back(result("health", "device/rank0", "health",
                               {{"multiprocessors", m(2, "count")}, {"memory_bytes", m(1e10, "bytes")}}));
  rep.results.push_back(result("health", "gemm/rank0", "health",
                               {{"tflops", m(0.17, "TFLOP/s")}, {"expected_fraction", m(0.93, "fraction")}}));
  rep.results.push_back(result(
      "burnin", "burnin/node/vm", "burnin",
      {{"gemms", m(29910, "count")}, {"tflops", m(0.0626, "TFLOP/s")}, {"sdc_mismatches", m(0, "count")}}));
  rep.results.push_back(result("other", "x", "other", {{"zeta", m(1, "count")}, {"alpha", m(2, "count")}}));
  const auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].figure, "slowest GEMM vs expected 93.0% (gemm/rank0), tflops 0.17 TFLOP/s");
  EXPECT_EQ(lines[1].figure, "GEMM 0.0626 TFLOP/s (burnin/node/vm), sdc_mismatches 0, gemms 29910");
  EXPECT_EQ(lines[2].figure, "alpha 2 (x)");
}

// A burn-in's line shows the node that mismatched (its figures and its count), not the first clean one.
TEST(HeadlineTest, BurninShowsTheNodeThatMismatched) {
  Report rep;
  rep.results.push_back(result("burnin", "burnin/node/vm-fake0", "burnin",
                               {{"tflops", m(0.065, "TFLOP/s")}, {"sdc_mismatches", m(0, "count")}}));
  rep.results.push_back(result("burnin", "burnin/node/vm-fake1", "burnin",
                               {{"tflops", m(0.061, "TFLOP/s")}, {"sdc_mismatches", m(1, "count")}}));
  rep.results.back().fail(
      "rank 3 (vm-fake1, GPU 1): checksum 9 at check 2 differs from its own first result 7");
  auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].figure, "GEMM 0.061 TFLOP/s (burnin/node/vm-fake1), sdc_mismatches 1");
  rep.results.back().status = Status::ok;  // both clean: the first node's
  rep.results.back().error.reset();
  lines = headlines(rep);
  EXPECT_EQ(lines[0].figure, "GEMM 0.065 TFLOP/s (burnin/node/vm-fake0), sdc_mismatches 0");
}

// Health is judged rank by rank: its line shows the rank furthest below its expectation, not rank 0's figure
// called a peak; a run with no expectation (one rank on the host) shows the slowest GEMM.
TEST(HeadlineTest, HealthShowsTheRankFurthestBelowItsExpectation) {
  Report rep;
  for (const auto& [rank, tflops, fraction] :
       {std::tuple{"gemm/rank0", 0.17, 0.99}, {"gemm/rank1", 0.19, 0.81}, {"gemm/rank2", 0.12, 0.95}})
    rep.results.push_back(
        result("health", rank, "health",
               {{"tflops", m(tflops, "TFLOP/s")}, {"expected_fraction", m(fraction, "fraction")}}));
  EXPECT_EQ(headlines(rep)[0].figure, "slowest GEMM vs expected 81.0% (gemm/rank1), tflops 0.19 TFLOP/s");
  for (auto& r : rep.results)
    std::erase_if(r.metrics, [](const auto& named) { return named.first == "expected_fraction"; });
  EXPECT_EQ(headlines(rep)[0].figure, "slowest GEMM 0.12 TFLOP/s (gemm/rank2)");
}

// MLPerf's figure is the score (the summarizer's mean over the runs), not the first run's time.
TEST(HeadlineTest, MlperfIsHeadedByItsScoreWhenThereIsOne) {
  Report rep;
  rep.results.push_back(result("mlperf", "llama/run1", "", {{"time_to_train_min", m(30.5, "min")}}));
  rep.results.push_back(result("mlperf", "llama/run2", "", {{"time_to_train_min", m(28, "min")}}));
  rep.results.push_back(result("mlperf", "llama/score", "", {{"time_to_train_min", m(29.1, "min")}}));
  EXPECT_EQ(headlines(rep)[0].figure, "score 29.1 min (llama/score)");
  rep.results.pop_back();
  EXPECT_EQ(headlines(rep)[0].figure, "time to train 30.5 min (llama/run1)");
}

TEST(HeadlineTest, SummaryFormatRendersOneLinePerStepUnderItsRun) {
  const std::string text = render_report({{"runs/a.json", suite_report()}}, parse_report_format("summary"));
  EXPECT_EQ(text.substr(0, text.find('\n')), "a: 4 steps, all ok");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);
}

}  // namespace
}  // namespace fb::reports

namespace fb::reports {
namespace {

// A --sweep-gpus is headed by its lowest goodput, the largest size's: its first (smallest) read 97% for a
// sweep that fell to 50%.
TEST(HeadlineTest, ASimulateSweepIsHeadedByItsLowestGoodput) {
  Report rep;
  for (const auto& [gpus, goodput] :
       {std::pair{1024, 97.07}, std::pair{131072, 49.94}, std::pair{16384, 85.75}})
    rep.results.push_back(result("simulate", fmt::format("llama3-h100/{}gpus/daly", gpus), "",
                                 {{"goodput_pct", m(goodput, "%")}, {"ettr", m(0.5, "fraction")}}));
  const auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].figure, "goodput 49.9% (llama3-h100/131072gpus/daly), ETTR 50.0%");
}

TEST(HeadlineTest, AttentionIsHeadedByItsFastestShapeWithBothDirections) {
  Report rep;
  rep.results.push_back(result("attention", "bf16/b1/s4096/h32-kv8/d128", "attention",
                               {{"tflops", m(401.2, "TFLOP/s")}, {"mfu", m(0.406, "fraction")}}));
  rep.results.push_back(result("attention", "bf16/b1/s8192/h32-kv8/d128", "attention",
                               {{"tflops", m(458.1, "TFLOP/s")},
                                {"mfu", m(0.463, "fraction")},
                                {"forward_tflops", m(520.3, "TFLOP/s")},
                                {"backward_tflops", m(431.0, "TFLOP/s")}}));
  const auto lines = headlines(rep);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].figure,
            "peak 458.1 TFLOP/s (bf16/b1/s8192/h32-kv8/d128), MFU 46.3%, fwd 520.3 TFLOP/s, bwd 431 TFLOP/s");
}

}  // namespace
}  // namespace fb::reports
