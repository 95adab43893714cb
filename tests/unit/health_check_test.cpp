// The pure parts of `factorybench health`: model matching, verdict arithmetic, the report shape and the
// supervisor's reading of it back.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "reports/report_json.hpp"
#include "workloads/health_check.hpp"

namespace fb::workloads {
namespace {

TEST(HealthCheck, GpuModelMatchesWholeWords) {
  EXPECT_TRUE(gpu_model_matches("NVIDIA H100 80GB HBM3", "H100"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA H200", "h200"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA B200", "B200"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA GB200", "GB200"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA H100-SXM5-80GB", "H100"));
  EXPECT_FALSE(gpu_model_matches("NVIDIA GB200", "B200"));  // a substring is not the model
  EXPECT_FALSE(gpu_model_matches("NVIDIA GH200 480GB", "H200"));
  EXPECT_FALSE(gpu_model_matches("NVIDIA H100 PCIe", "H200"));
  EXPECT_TRUE(gpu_model_matches("anything", ""));
}

TEST(HealthCheck, CombineVerdicts) {
  using V = Verdict;
  EXPECT_EQ(combine_verdicts(std::vector<V>{}), V::pass);
  EXPECT_EQ(combine_verdicts(std::vector<V>{V::pass, V::skip}), V::pass);
  EXPECT_EQ(combine_verdicts(std::vector<V>{V::pass, V::warn, V::skip}), V::warn);
  EXPECT_EQ(combine_verdicts(std::vector<V>{V::warn, V::fail, V::pass}), V::fail);
  EXPECT_EQ(parse_verdict("skip"), V::skip);
  EXPECT_THROW(parse_verdict("ok"), Error);
}

TEST(HealthCheck, ValidateOptionsNamesTheOption) {
  HealthOptions o;
  EXPECT_NO_THROW(validate_health_options(o));
  o.gemm_floor = 1.5;
  try {
    validate_health_options(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "invalid --gemm-floor 1.5: must be a fraction in [0, 1]");
  }
  o = {};
  o.expect_gpu = "A100";
  EXPECT_THROW(validate_health_options(o), Error);
  o = {};
  o.min_free_memory = -0.1;
  EXPECT_THROW(validate_health_options(o), Error);
}

HealthRun two_ranks() {
  HealthRun run;
  for (int r = 0; r < 2; ++r) {
    RankHealth h;
    h.rank = r;
    h.host = "node1";
    h.device = "NVIDIA H200";
    CheckOutcome gemm{"gemm", Verdict::pass, "bf16 8192^3: 780 TFLOP/s", {}};
    gemm.metrics.emplace_back("tflops",
                              reports::Metric{780.0 - r, "TFLOP/s", reports::Better::higher, std::nullopt});
    CheckOutcome ckpt{
        "checkpoint_dir",
        r == 1 ? Verdict::fail : Verdict::pass,
        r == 1 ? "checkpoint dir '/ckpt' is not writable: cannot create x: Permission denied" : "2 GB/s",
        {}};
    CheckOutcome ecc{"ecc", Verdict::skip, "ECC counters unavailable", {}};
    CheckOutcome mem{"memory", r == 0 ? Verdict::warn : Verdict::pass, "only 80% free", {}};
    h.checks = {gemm, ckpt, ecc, mem};
    std::vector<Verdict> v;
    for (const auto& c : h.checks) v.push_back(c.verdict);
    h.verdict = combine_verdicts(v);
    run.ranks.push_back(h);
    run.verdicts.push_back(h.verdict);
  }
  return run;
}

TEST(HealthCheck, ResultsAndSummaryShape) {
  const HealthRun run = two_ranks();
  EXPECT_FALSE(run.all_pass());
  EXPECT_EQ(run.failed_ranks(), std::vector<int>{1});
  const auto results = health_results(run);
  ASSERT_EQ(results.size(), 8u);
  EXPECT_EQ(results[0].benchmark, "health");
  EXPECT_EQ(results[0].name, "gemm/rank0");
  EXPECT_EQ(results[0].status, reports::Status::ok);
  EXPECT_EQ(results[5].name, "checkpoint_dir/rank1");
  EXPECT_EQ(results[5].status, reports::Status::failed);
  EXPECT_NE(results[5].error->find("Permission denied"), std::string::npos);
  EXPECT_EQ(results[2].status, reports::Status::skipped);
  EXPECT_EQ(results[3].extra["verdict"], "warn");
  EXPECT_EQ(results[3].status, reports::Status::ok);  // a warning passes

  const auto s = health_summary(run, HealthOptions{});
  EXPECT_EQ(s["verdict"], "fail");
  EXPECT_EQ(s["ranks_failed"], nlohmann::json({1}));
  EXPECT_EQ(s["ranks"][0]["verdict"], "warn");
  EXPECT_EQ(s["ranks"][0]["warned"], nlohmann::json({"memory"}));
  EXPECT_EQ(s["ranks"][1]["failed"], nlohmann::json({"checkpoint_dir"}));
  EXPECT_NE(s["ranks"][1]["reason"].get<std::string>().find("checkpoint_dir: checkpoint dir '/ckpt'"),
            std::string::npos);
}

// What the resilience supervisor does with a `health --output` file: the verdicts come back per rank.
TEST(HealthCheck, VerdictsReadBackFromAReport) {
  reports::Report report;
  report.results = health_results(two_ranks());
  reports::Result other;
  other.benchmark = "gemm";
  other.name = "bf16/8192x8192x8192";
  report.results.push_back(other);
  const auto round_trip = reports::report_from_json(reports::to_json(report), "health.json");
  const auto ranks = health_from_report(round_trip);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].verdict, Verdict::warn);
  EXPECT_EQ(ranks[1].verdict, Verdict::fail);
  EXPECT_EQ(ranks[1].host, "node1");
  ASSERT_NE(ranks[1].find("checkpoint_dir"), nullptr);
  EXPECT_EQ(ranks[1].find("checkpoint_dir")->verdict, Verdict::fail);
  EXPECT_EQ(ranks[1].find("ecc")->verdict, Verdict::skip);
  EXPECT_DOUBLE_EQ(ranks[1].find("gemm")->metrics.at(0).second.value, 779.0);

  report.results[0].params.erase("rank");
  try {
    health_from_report(report);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "results[0] (gemm/rank0).params.rank: missing or not an integer");
  }
}

}  // namespace
}  // namespace fb::workloads
