// The pure parts of `factorybench health`: model matching, verdict arithmetic, the report shape and the
// supervisor's reading of it back.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/hardware_table.hpp"
#include "core/nvml_loader.hpp"
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
  EXPECT_TRUE(gpu_model_matches("NVIDIA A100-SXM4-80GB", "A100"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA GH200 480GB", "GH200"));
  EXPECT_TRUE(gpu_model_matches("anything", ""));
  // A list: any model in it (the Hopper node-validation preset runs on H100 and H200 nodes).
  EXPECT_TRUE(gpu_model_matches("NVIDIA H100 80GB HBM3", "H100,H200"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA H200", "H100,H200"));
  EXPECT_FALSE(gpu_model_matches("NVIDIA GH200 480GB", "H100,H200"));
  EXPECT_TRUE(gpu_model_matches("NVIDIA GB200", "B200,GB200"));
  EXPECT_EQ(expected_models_text("H100"), "H100");
  EXPECT_EQ(expected_models_text("H100,H200"), "H100 or H200");
  EXPECT_EQ(expected_models_text("B200,GB200,GB300"), "B200, GB200 or GB300");
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
  o.expect_gpu = "MI300X";
  EXPECT_THROW(validate_health_options(o), Error);
  o.expect_gpu = "A100,GH200";
  EXPECT_NO_THROW(validate_health_options(o));
  o.expect_gpu = "H100,H100";
  EXPECT_THROW(validate_health_options(o), Error);
  o.expect_gpu = "H100,";
  EXPECT_THROW(validate_health_options(o), Error);
  o.expect_gpu = "H100,H200";
  EXPECT_NO_THROW(validate_health_options(o));
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

// The host class is calibrated by the job itself: the median of the ranks' figures (a failed rank's 0
// left out), never the FMA peak that OpenBLAS reaches only in part.
TEST(HealthCheck, HostExpectationIsTheJobsMedianRank) {
  DevicePeak host;
  host.measured = true;
  host.tflops["fp32"] = 0.28;  // FMA peak: not what the GEMM is judged against
  const double ranks[] = {0.10, 0.11, 0.01, 0.0};
  const auto e = gemm_expectation(host, "fp32", ranks);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->tflops, 0.10);
  EXPECT_EQ(e->basis, "median of 3 rank(s) running the same GEMM");
  const double none[] = {0.0, 0.0};
  EXPECT_FALSE(gemm_expectation(host, "fp32", none));
}

TEST(HealthCheck, GpuExpectationIsMamfThenPeak) {
  DevicePeak gpu;
  gpu.class_name = "H200 SXM";
  gpu.tflops = {{"bf16", 989.0}, {"fp32", 67.0}};
  gpu.mamf_tflops = {{"bf16", 783.5}};
  const double ranks[] = {700.0};
  auto e = gemm_expectation(gpu, "bf16", ranks);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->tflops, 783.5);  // 0.8 x 783.5 = 627: the H200's 745.9 passes
  EXPECT_EQ(e->basis, "MAMF 783.5 (H200 SXM)");
  e = gemm_expectation(gpu, "fp32", ranks);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->tflops, 67.0);
  EXPECT_FALSE(gemm_expectation(gpu, "fp64", ranks));
}

TEST(HealthCheck, FloorComesFromTheOptionThenTheClass) {
  DevicePeak peak;
  HealthOptions o;
  EXPECT_DOUBLE_EQ(gemm_floor(o, peak), kDefaultGemmFloor);
  peak.health_gemm_floor = 0.5;
  EXPECT_DOUBLE_EQ(gemm_floor(o, peak), 0.5);
  o.gemm_floor = 0.9;
  EXPECT_DOUBLE_EQ(gemm_floor(o, peak), 0.9);
}

// The shipped tables: every GPU class has a floor, and the host class exists with its own.
TEST(HealthCheck, HardwareTablesCarryClassFloors) {
  setenv("FACTORYBENCH_CONFIG_DIR", FB_SOURCE_DIR "/configs", 1);
  const auto table = load_hardware_table();
  const auto cpu = find_hardware_class(table, "cpu");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->health_gemm_floor, 0.5);
  EXPECT_TRUE(cpu->match.empty());  // never matched by a GPU's name
  // 0.8 of the published MAMF; 0.6 of the dense peak where no MAMF is published (the PCIe cards, GB300):
  // measured MAMFs are 73-84% of the dense peak (GB200 1822 of 2500), so 0.8 of the peak fails healthy GPUs.
  int gpus = 0;
  for (const auto& hw : table)
    if (hw.kind == "gpu") {
      ++gpus;
      EXPECT_EQ(hw.health_gemm_floor, hw.mamf_tflops.empty() ? 0.6 : 0.8) << hw.file;
    }
  EXPECT_GE(gpus, 10);
  const auto h200 = find_hardware(table, "NVIDIA H200");
  ASSERT_TRUE(h200);
  EXPECT_EQ(h200->name, "H200 SXM");
  // A match starts a word: a Grace Hopper GH200 is not an H200 SXM (other power, other MAMF), a GB200 is
  // its own entry, not a B200.
  EXPECT_EQ(find_hardware(table, "NVIDIA GH200 480GB")->name, "GH200");
  // The H200 NVL (PCIe, 600 W, 835 dense bf16 TFLOP/s) is not an H200 SXM, nor an H100 PCIe an H100 SXM.
  EXPECT_EQ(find_hardware(table, "NVIDIA H200 NVL")->name, "H200 NVL");
  EXPECT_EQ(find_hardware(table, "NVIDIA H100 NVL")->name, "H100 NVL");
  EXPECT_EQ(find_hardware(table, "NVIDIA H100 PCIe")->name, "H100 PCIe");
  EXPECT_EQ(find_hardware(table, "NVIDIA A100-SXM4-80GB")->name, "A100");
  EXPECT_EQ(find_hardware(table, "NVIDIA A100 80GB PCIe")->name, "A100");
  // Products with no entry get none rather than a neighbour's peaks.
  EXPECT_FALSE(find_hardware(table, "NVIDIA H800"));
  EXPECT_FALSE(find_hardware(table, "NVIDIA L40S"));
  // An excluded word acts only as a whole word of the name.
  HardwarePeaks sxm;
  sxm.name = "X SXM";
  sxm.match = {"X"};
  sxm.exclude = {"NVL"};
  EXPECT_FALSE(find_hardware({sxm}, "NVIDIA X NVL"));
  EXPECT_EQ(find_hardware({sxm}, "NVIDIA X NVLink")->name, "X SXM");
  EXPECT_EQ(find_hardware(table, "NVIDIA GB200")->name, find_hardware(table, "GB200")->name);
  EXPECT_NE(find_hardware(table, "NVIDIA GB200")->name, find_hardware(table, "NVIDIA B200")->name);
  EXPECT_EQ(find_hardware(table, "NVIDIA H100 80GB HBM3")->name,
            find_hardware(table, "NVIDIA H100 SXM5")->name);
}

TEST(HealthCheck, HardwareFloorOutOfRangeIsAnInputError) {
  const auto dir = std::string(::testing::TempDir()) + "/fb_hw_floor";
  std::filesystem::create_directories(dir + "/hardware");
  std::ofstream(dir + "/hardware/x.json")
      << R"({"name": "X", "match": ["X"], "peak_tflops": {}, "health": {"gemm_floor": 1.5}})";
  setenv("FACTORYBENCH_CONFIG_DIR", dir.c_str(), 1);
  try {
    load_hardware_table();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("health.gemm_floor: must be a fraction in [0, 1]"),
              std::string::npos);
  }
  setenv("FACTORYBENCH_CONFIG_DIR", FB_SOURCE_DIR "/configs", 1);
}

TEST(HealthCheck, ClockThresholdsComeFromTheClass) {
  DevicePeak peak;
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).power_limit_fail, 0.75);
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).power_limit_warn, 0.95);
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).clock_under_load_warn, 0.7);
  peak.health_power_limit_fail = 0.5;
  peak.health_clock_under_load_warn = 0.6;
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).power_limit_fail, 0.5);
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).power_limit_warn, 0.95);
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).clock_under_load_warn, 0.6);
  peak.health_power_limit_fail = 0.97;  // above the default warn: warn follows it
  EXPECT_DOUBLE_EQ(clock_thresholds(peak).power_limit_warn, 0.97);
  // From a table entry, checked: a fail above the warn, an unknown field.
  const auto dir = std::string(::testing::TempDir()) + "/fb_hw_clock";
  std::filesystem::create_directories(dir + "/hardware");
  const auto error_of = [&](const char* health) {
    std::ofstream(dir + "/hardware/x.json")
        << R"({"name": "X", "match": ["X"], "peak_tflops": {}, "health": )" << health << "}";
    setenv("FACTORYBENCH_CONFIG_DIR", dir.c_str(), 1);
    std::string what;
    try {
      const auto table = load_hardware_table();
      what = "ok " + std::to_string(table.at(0).health_power_limit_fail.value_or(-1));
    } catch (const Error& e) {
      what = e.what();
    }
    setenv("FACTORYBENCH_CONFIG_DIR", FB_SOURCE_DIR "/configs", 1);
    return what;
  };
  EXPECT_EQ(error_of(R"({"power_limit_fail": 0.6, "power_limit_warn": 0.8})"), "ok 0.600000");
  EXPECT_NE(error_of(R"({"power_limit_fail": 0.9, "power_limit_warn": 0.8})")
                .find("health.power_limit_fail: must not exceed health.power_limit_warn"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"power_limt_fail": 0.9})").find("health.power_limt_fail: unknown field"),
            std::string::npos);
}

// The cuda path's NVML verdicts on the scripted NVML (tests/fakes/fake_nvml.c): a healthy GPU passes; a
// throttled one (hardware thermal slowdown, a capped power limit, a low clock under load) fails or warns
// with the reason.
class HealthFakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(FB_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    set_ = reinterpret_cast<int (*)(const char*, unsigned long long)>(dlsym(handle_, "fake_nvml_set"));
    ASSERT_NE(set_, nullptr);
    set("reset", 0);
    lib_ = nvml::Library::open(FB_FAKE_NVML_PATH);
    ASSERT_TRUE(lib_->available()) << lib_->reason();
    gpu_ = lib_->device("0000:01:00.0", 0);
    ASSERT_TRUE(gpu_);
  }
  void TearDown() override {
    gpu_.reset();
    lib_.reset();
    if (handle_) dlclose(handle_);
  }
  void set(const char* key, unsigned long long value) { ASSERT_EQ(set_(key, value), 0) << key; }

  void* handle_ = nullptr;
  int (*set_)(const char*, unsigned long long) = nullptr;
  std::shared_ptr<nvml::Library> lib_;
  std::optional<nvml::Device> gpu_;
};

TEST_F(HealthFakeNvml, HealthyGpuPasses) {
  const auto clocks = gpu_clocks_outcome(*gpu_, std::nullopt);
  EXPECT_EQ(clocks.verdict, Verdict::pass) << clocks.reason;
  EXPECT_EQ(clocks.reason, "power limit 700 W of default 700 W; SM clock 1980 MHz idle");
  const auto slow = gpu_slowdown_outcome(*gpu_, std::nullopt);
  EXPECT_EQ(slow.verdict, Verdict::pass) << slow.reason;
}

TEST_F(HealthFakeNvml, ThermalSlowdownFails) {
  set("reasons", nvml::kReasonHwThermalSlowdown | nvml::kReasonSwThermalSlowdown);
  const auto o = gpu_slowdown_outcome(*gpu_, std::nullopt);
  EXPECT_EQ(o.verdict, Verdict::fail);
  EXPECT_NE(o.reason.find("active hardware slowdown: "), std::string::npos) << o.reason;
  EXPECT_NE(o.reason.find("hw_thermal_slowdown"), std::string::npos) << o.reason;
}

TEST_F(HealthFakeNvml, CappedPowerLimitFailsAndLowClockUnderLoadWarns) {
  set("power_limit_mw", 400000);  // 400 of 700 W: below 75%
  auto o = gpu_clocks_outcome(*gpu_, std::nullopt);
  EXPECT_EQ(o.verdict, Verdict::fail);
  EXPECT_NE(o.reason.find("power limit 400 W of default 700 W (below 75%)"), std::string::npos) << o.reason;
  // A site that caps power on purpose sets its cap's fraction for the class: 400 of 700 W only warns.
  ClockThresholds capped;
  capped.power_limit_fail = 0.5;
  o = gpu_clocks_outcome(*gpu_, std::nullopt, capped);
  EXPECT_EQ(o.verdict, Verdict::warn) << o.reason;
  set("power_limit_mw", 700000);
  const nlohmann::json window = {{"gpu", {{"sm_clock_mhz", {{"median", 990.0}}}}}};  // half the max clock
  o = gpu_clocks_outcome(*gpu_, window);
  EXPECT_EQ(o.verdict, Verdict::warn);
  EXPECT_NE(o.reason.find("SM clock 990 MHz under load of max 1980 (below 70%)"), std::string::npos)
      << o.reason;
}

}  // namespace
}  // namespace fb::workloads
