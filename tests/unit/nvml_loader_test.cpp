// NVML through dlopen: a missing library is "unavailable", never an error; a scripted fake NVML
// (tests/fakes/fake_nvml.c) drives the loader, the sampler and the ECC / remap / throttle delta logic end to
// end.
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/nvml_loader.hpp"
#include "core/telemetry_sampler.hpp"

namespace fb {
namespace {

using nlohmann::json;

bool contains(const json& array, const std::string& name) {
  for (const auto& x : array)
    if (x == name) return true;
  return false;
}

// The fake's control functions, from the same loaded copy the loader opens.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(FB_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    set_ = reinterpret_cast<int (*)(const char*, unsigned long long)>(dlsym(handle_, "fake_nvml_set"));
    get_ = reinterpret_cast<unsigned long long (*)(const char*)>(dlsym(handle_, "fake_nvml_get"));
    ASSERT_NE(set_, nullptr);
    ASSERT_NE(get_, nullptr);
    set("reset", 0);
    setenv("FACTORYBENCH_NVML_LIBRARY", FB_FAKE_NVML_PATH, 1);
  }
  void TearDown() override {
    unsetenv("FACTORYBENCH_NVML_LIBRARY");
    if (handle_) dlclose(handle_);
  }
  void set(const char* key, unsigned long long value) { ASSERT_EQ(set_(key, value), 0) << key; }
  unsigned long long get(const char* key) { return get_(key); }
  // Waits (generously: this asserts progress, not speed) until the sampler thread has read the SM clock
  // `calls` more times.
  void wait_for_samples(unsigned long long calls) {
    const auto start = get("clock_calls");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (get("clock_calls") < start + calls && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_GE(get("clock_calls"), start + calls) << "the sampling thread did not run";
  }

  void* handle_ = nullptr;
  int (*set_)(const char*, unsigned long long) = nullptr;
  unsigned long long (*get_)(const char*) = nullptr;
};

DeviceInfo fake_gpu(const std::string& bus = "0000:02:00.0", int index = 1) {
  DeviceInfo d;
  d.kind = "gpu";
  d.name = "NVIDIA H200";
  d.pci_bus_id = bus;
  d.index = index;
  return d;
}

TEST(NvmlLoader, MissingLibraryIsUnavailableNotAnError) {
  const auto lib = nvml::Library::open("/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(lib->available());
  EXPECT_NE(lib->reason().find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos)
      << lib->reason();
  EXPECT_EQ(lib->device_count(), 0u);
  std::string why;
  EXPECT_FALSE(lib->device("0000:01:00.0", 0, &why));
  EXPECT_EQ(why, lib->reason());
}

TEST(NvmlLoader, ThisMachinesLibraryLoadsOrSaysWhy) {
  unsetenv("FACTORYBENCH_NVML_LIBRARY");
  EXPECT_EQ(nvml::Library::default_path(), "libnvidia-ml.so.1");
  const auto lib = nvml::Library::open();
  if (lib->available()) {
    EXPECT_TRUE(lib->reason().empty());  // a machine with a driver
  } else {
    EXPECT_NE(lib->reason().find("libnvidia-ml.so.1"), std::string::npos) << lib->reason();
  }
}

TEST(NvmlLoader, SamplerRecordsUnavailableGpuAndStillSamplesTheHost) {
  setenv("FACTORYBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  auto sampler = make_telemetry_sampler({TelemetryMode::summary, 0.01, 1.0}, fake_gpu());
  unsetenv("FACTORYBENCH_NVML_LIBRARY");
  const double t0 = sampler->mark();
  const double t1 = sampler->mark();
  const json s = sampler->summary(t0, t1);
  ASSERT_TRUE(s.contains("gpu"));
  EXPECT_FALSE(s["gpu"]["available"].get<bool>());
  EXPECT_NE(s["gpu"]["reason"].get<std::string>().find("cannot load"), std::string::npos);
  EXPECT_GE(s["samples"].get<int>(), 2);
  EXPECT_TRUE(s.contains("host"));
}

TEST(NvmlLoader, ClockEventReasonNames) {
  EXPECT_TRUE(nvml::clock_event_reason_names(0).empty());
  EXPECT_EQ(nvml::clock_event_reason_names(nvml::kReasonSwPowerCap | nvml::kReasonHwSlowdown),
            (std::vector<std::string>{"sw_power_cap", "hw_slowdown"}));
  EXPECT_EQ(nvml::clock_event_reason_names(0x40 | 0x80 | (1ull << 40)),
            (std::vector<std::string>{"hw_thermal_slowdown", "hw_power_brake_slowdown", "bit_40"}));
  EXPECT_EQ(nvml::kSlowdownReasons & nvml::kReasonSwPowerCap, 0u);
  EXPECT_EQ(nvml::kSlowdownReasons & nvml::kReasonGpuIdle, 0u);
}

TEST_F(FakeNvml, ReadsScriptedValues) {
  set("nvlink_links", 4);
  set("nvlink_errors_per_counter", 2);
  set("remap_pending", 1);
  const auto lib = nvml::Library::open();
  ASSERT_TRUE(lib->available()) << lib->reason();
  EXPECT_EQ(lib->device_count(), 2u);
  const auto dev = lib->device("0000:02:00.0", 0);
  ASSERT_TRUE(dev);
  const auto r = dev->read(true);
  EXPECT_EQ(r.sm_clock_mhz, 1980);
  EXPECT_EQ(r.mem_clock_mhz, 3201);
  EXPECT_DOUBLE_EQ(*r.power_w, 350.0);
  EXPECT_EQ(r.temperature_c, 45);
  EXPECT_EQ(r.gpu_util_pct, 100);
  EXPECT_EQ(r.clock_event_reasons, 0u);
  EXPECT_EQ(r.ecc_uncorrected, 0u);
  EXPECT_EQ(r.remap_pending, true);
  EXPECT_EQ(r.nvlink_errors, 4u * 4u * 2u);  // 4 active links x 4 counters x 2
  const auto fast = dev->read(false);
  EXPECT_TRUE(fast.sm_clock_mhz);
  EXPECT_FALSE(fast.ecc_uncorrected);  // counters only when asked
  const auto l = dev->limits();
  EXPECT_EQ(l.name, "NVIDIA H200 (fake)");
  EXPECT_DOUBLE_EQ(*l.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*l.default_power_limit_w, 700.0);
  EXPECT_EQ(l.max_sm_clock_mhz, 1980);
  EXPECT_EQ(l.memory_total_bytes, 150ull << 30);
  // An unknown bus id is no device, even where the index names one (under CUDA_VISIBLE_DEVICES it would be
  // another GPU's); without a bus id the index is the match, and an unknown index says why.
  std::string why;
  EXPECT_FALSE(lib->device("0000:99:00.0", 1, &why));
  EXPECT_NE(why.find("no NVML device at PCI bus id '0000:99:00.0'"), std::string::npos) << why;
  EXPECT_NE(why.find("not matched by its index"), std::string::npos) << why;
  EXPECT_TRUE(lib->device("", 1));
  EXPECT_FALSE(lib->device("", 7, &why));
  EXPECT_NE(why.find("Invalid Argument"), std::string::npos) << why;
}

TEST_F(FakeNvml, UnsupportedQueriesAreUnavailable) {
  set("remap_supported", 0);
  set("power_supported", 0);
  set("ecc_supported", 0);
  const auto lib = nvml::Library::open();
  ASSERT_TRUE(lib->available());
  const auto r = lib->device("0000:01:00.0", 0)->read(true);
  EXPECT_FALSE(r.power_w);
  EXPECT_FALSE(r.remap_pending);
  EXPECT_FALSE(r.ecc_uncorrected);
  EXPECT_TRUE(r.sm_clock_mhz);

  auto sampler = make_telemetry_sampler({TelemetryMode::summary, 0.01, 1.0}, fake_gpu("0000:01:00.0", 0));
  const double t0 = sampler->mark(), t1 = sampler->mark();
  const json g = sampler->summary(t0, t1)["gpu"];
  EXPECT_TRUE(g["available"].get<bool>());
  for (const char* name : {"power_w", "remap_pending", "ecc_uncorrected", "remapped_rows_uncorrected"})
    EXPECT_TRUE(contains(g["unavailable"], name)) << name << " in " << g.dump();
  EXPECT_FALSE(g.contains("power_w"));
  EXPECT_TRUE(g.contains("sm_clock_mhz"));
}

TEST_F(FakeNvml, InitFailureIsUnavailableWithTheReason) {
  set("init_fails", 1);
  const auto lib = nvml::Library::open();
  EXPECT_FALSE(lib->available());
  EXPECT_EQ(lib->reason(), "nvmlInit_v2 failed: Unknown Error (999)");
}

// The whole path: background sampling, marks, and the deltas of one window against the next.
TEST_F(FakeNvml, SamplerSummarisesWindowsWithDeltas) {
  set("ecc_corrected", 10);  // counts from before the run are not the window's
  set("pcie_replays", 3);
  auto sampler = make_telemetry_sampler({TelemetryMode::full, 0.002, 0.01}, fake_gpu());
  const double t0 = sampler->mark();
  set("sm_clock", 1500);
  wait_for_samples(3);
  set("sm_clock", 1700);
  set("temp", 83);
  set("power_mw", 690000);
  set("reasons", nvml::kReasonSwPowerCap | nvml::kReasonHwSlowdown);
  set("ecc_corrected", 15);
  set("ecc_uncorrected", 2);
  set("remap_uncorrected", 1);
  set("remap_pending", 1);
  set("pcie_replays", 10);
  set("nvlink_links", 2);
  set("nvlink_errors_per_counter", 1);
  wait_for_samples(3);
  const double t1 = sampler->mark();
  set("reasons", 0);
  wait_for_samples(2);
  const double t2 = sampler->mark();
  wait_for_samples(2);
  const double t3 = sampler->mark();

  const json a = sampler->summary(t0, t1);
  const json& g = a["gpu"];
  ASSERT_TRUE(g["available"].get<bool>()) << a.dump();
  EXPECT_EQ(g["sm_clock_mhz"]["min"], 1500);
  EXPECT_EQ(g["sm_clock_mhz"]["max"], 1980);
  EXPECT_EQ(g["temperature_c"]["max"], 83);
  EXPECT_DOUBLE_EQ(g["power_w"]["max"].get<double>(), 690.0);
  EXPECT_EQ(g["clock_event_reasons"], json({"sw_power_cap", "hw_slowdown"}));
  EXPECT_EQ(g["slowdown_reasons"], json({"hw_slowdown"}));
  EXPECT_EQ(g["ecc_corrected_delta"], 5);
  EXPECT_EQ(g["ecc_uncorrected_delta"], 2);
  EXPECT_EQ(g["ecc_uncorrected"], 2);
  EXPECT_EQ(g["remapped_rows_uncorrected_delta"], 1);
  EXPECT_EQ(g["remap_pending"], true);
  EXPECT_EQ(g["remap_failure"], false);
  EXPECT_EQ(g["pcie_replays_delta"], 7);
  EXPECT_EQ(g["nvlink_errors_delta"], 8);  // 0 links before, 2 links x 4 counters x 1 after
  EXPECT_TRUE(g["unavailable"].empty()) << g["unavailable"];
  EXPECT_GE(a["samples"].get<int>(), 8);
  // Full mode keeps the series of the window.
  ASSERT_TRUE(a.contains("series"));
  EXPECT_EQ(a["series"]["t_s"].size(), a["samples"].get<std::size_t>());
  EXPECT_EQ(a["series"]["gpu"]["sm_clock_mhz"].size(), a["samples"].get<std::size_t>());
  EXPECT_EQ(a["series"]["gpu"]["sm_clock_mhz"].front(), 1980);

  // The next window starts from the counters at t1 (its first sample): nothing new.
  const json b = sampler->summary(t1, t2);
  EXPECT_EQ(b["gpu"]["ecc_uncorrected_delta"], 0);
  EXPECT_EQ(b["gpu"]["pcie_replays_delta"], 0);
  EXPECT_EQ(b["gpu"]["remap_pending"], true);
  EXPECT_EQ(b["gpu"]["sm_clock_mhz"]["min"], 1700);
  // Once the reasons have cleared, a window after them sees none.
  EXPECT_EQ(sampler->summary(t2, t3)["gpu"]["slowdown_reasons"], json::array());
  sampler->stop();
  const auto n = sampler->sample_count();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(sampler->sample_count(), n);  // stopped means stopped
}

// Several ranks' summaries into one.
TEST(Telemetry, CombineRanks) {
  std::vector<TelemetrySample> r0(2), r1(2);
  r0[0].gpu.sm_clock_mhz = 1980;
  r0[1].gpu.sm_clock_mhz = 1900;
  r1[0].gpu.sm_clock_mhz = 1400;
  r1[1].gpu.sm_clock_mhz = 1980;
  r0[0].gpu.temperature_c = 50;
  r1[1].gpu.temperature_c = 88;
  r0[0].gpu.ecc_uncorrected = 0;
  r0[1].gpu.ecc_uncorrected = 1;
  r1[0].gpu.ecc_uncorrected = 4;
  r1[1].gpu.ecc_uncorrected = 6;
  r0[1].gpu.clock_event_reasons = nvml::kReasonSwPowerCap;
  r1[1].gpu.clock_event_reasons = nvml::kReasonHwThermalSlowdown;
  r1[1].t_s = 3.0;
  auto s0 = summarize_telemetry(r0), s1 = summarize_telemetry(r1);
  s0["gpu"]["available"] = true;
  s1["gpu"]["available"] = true;
  const std::vector<json> ranks{s0, s1};
  const json c = combine_telemetry(ranks);
  EXPECT_EQ(c["ranks"], 2);
  EXPECT_EQ(c["gpu"]["sm_clock_mhz"]["min"], 1400);
  EXPECT_EQ(c["gpu"]["sm_clock_mhz"]["min_rank"], 1);
  EXPECT_EQ(c["gpu"]["sm_clock_mhz"]["max"], 1980);
  EXPECT_EQ(c["gpu"]["temperature_c"]["max"], 88);
  EXPECT_EQ(c["gpu"]["temperature_c"]["max_rank"], 1);
  EXPECT_EQ(c["gpu"]["ecc_uncorrected_delta"], 3);  // 1 + 2
  EXPECT_EQ(c["gpu"]["clock_event_reasons"], json({"hw_thermal_slowdown", "sw_power_cap"}));
  EXPECT_EQ(c["gpu"]["slowdown_reasons"], json({"hw_thermal_slowdown"}));
  EXPECT_EQ(c["gpu"]["available"], true);
  EXPECT_DOUBLE_EQ(c["window_s"].get<double>(), 3.0);
  // A rank without NVML makes the combined GPU part unavailable.
  json s2 = s1;
  s2["gpu"] = {{"available", false}, {"reason", "cannot load libnvidia-ml.so.1"}};
  const std::vector<json> mixed{s0, s2};
  EXPECT_EQ(combine_telemetry(mixed)["gpu"]["available"], false);
}

TEST(Telemetry, ParseMode) {
  EXPECT_EQ(parse_telemetry_mode("off"), TelemetryMode::off);
  EXPECT_EQ(parse_telemetry_mode("full"), TelemetryMode::full);
  try {
    parse_telemetry_mode("some");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "invalid --telemetry 'some': expected off, summary or full");
  }
}

}  // namespace
}  // namespace fb
