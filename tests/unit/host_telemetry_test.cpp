// Host telemetry parses /proc and /sys: known answers from fixture trees (tests/data/telemetry/*), and
// plausible values from the live machine.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/host_telemetry.hpp"
#include "core/telemetry_sampler.hpp"

namespace fb::host {
namespace {

// FB_SOURCE_DIR is a compile definition (tests/CMakeLists.txt): CMake 3.25's gtest_discover_tests keeps only
// the first entry of a list-valued ENVIRONMENT property, so the ctest environment cannot carry it.
std::filesystem::path fixture(const char* name) {
  return std::filesystem::path(FB_SOURCE_DIR) / "tests/data/telemetry" / name;
}

TEST(HostTelemetry, BareMetalCpufreq) {
  const auto root = fixture("bare-metal");
  EXPECT_EQ(read_cpu_mhz(root), (std::vector<double>{2400, 3100, 1200, 3500}));
  EXPECT_EQ(read_cpu_mhz(root, {1, 3}), (std::vector<double>{3100, 3500}));
  EXPECT_EQ(read_cpu_max_mhz(root), 3800);
  EXPECT_EQ(read_cpu_max_mhz(root, {0, 1}), 3500);
}

TEST(HostTelemetry, VmFallsBackToCpuinfo) {
  const auto root = fixture("vm");
  EXPECT_EQ(read_cpu_mhz(root), (std::vector<double>{2000.0, 2100.5}));
  EXPECT_EQ(read_cpu_mhz(root, {1}), (std::vector<double>{2100.5}));
  EXPECT_FALSE(read_cpu_max_mhz(root));
  EXPECT_TRUE(read_thermal_zones(root).empty());
  EXPECT_FALSE(read_edac(root));
}

TEST(HostTelemetry, LoadAverage) {
  const auto l = read_loadavg(fixture("bare-metal"));
  ASSERT_TRUE(l);
  EXPECT_DOUBLE_EQ(l->load1, 1.25);
  EXPECT_DOUBLE_EQ(l->load5, 0.75);
  EXPECT_DOUBLE_EQ(l->load15, 0.50);
  EXPECT_EQ(l->runnable, 3);
  EXPECT_EQ(l->threads, 812);
  EXPECT_FALSE(read_loadavg(fixture("missing")));
}

TEST(HostTelemetry, Meminfo) {
  const auto m = read_meminfo(fixture("bare-metal"));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total_bytes, 263840000ull * 1024);
  EXPECT_EQ(m->available_bytes, 250000000ull * 1024);
  EXPECT_EQ(m->free_bytes, 200000000ull * 1024);
  // Without MemAvailable (kernels before 3.14): MemFree + Buffers + Cached.
  const auto vm = read_meminfo(fixture("vm"));
  ASSERT_TRUE(vm);
  EXPECT_EQ(vm->available_bytes, (1024000ull + 10000 + 500000) * 1024);
}

TEST(HostTelemetry, ThermalZonesSkipAbsentSensors) {
  const auto zones = read_thermal_zones(fixture("bare-metal"));
  ASSERT_EQ(zones.size(), 2u);
  EXPECT_EQ(zones[0].name, "thermal_zone0");
  EXPECT_EQ(zones[0].type, "x86_pkg_temp");
  EXPECT_DOUBLE_EQ(zones[0].celsius, 61.0);
  EXPECT_EQ(zones[1].type, "acpitz");
  EXPECT_DOUBLE_EQ(zones[1].celsius, 27.8);
}

TEST(HostTelemetry, EdacCounts) {
  const auto e = read_edac(fixture("bare-metal"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->controllers, 2);
  EXPECT_EQ(e->corrected, 5u);
  EXPECT_EQ(e->uncorrected, 1u);
}

TEST(HostTelemetry, ReaderSummarisesItsCpus) {
  const HostReader reader(fixture("bare-metal"), {0, 1, 2});
  EXPECT_TRUE(reader.has_cpufreq());
  const auto r = reader.read(false);  // cpufreq is cheap: read even without the slow sources
  EXPECT_EQ(r.cpu_mhz_min, 1200);
  EXPECT_EQ(r.cpu_mhz_median, 2400);
  EXPECT_EQ(r.cpu_mhz_max, 3100);
  EXPECT_EQ(r.load1, 1.25);
  EXPECT_EQ(r.temperature_c, 61.0);
  EXPECT_EQ(r.mem_available_bytes, 250000000.0 * 1024);

  const HostReader vm(fixture("vm"), {0, 1});
  EXPECT_FALSE(vm.has_cpufreq());
  EXPECT_FALSE(vm.read(false).cpu_mhz_median);  // /proc/cpuinfo only at the slow cadence
  EXPECT_EQ(vm.read(true).cpu_mhz_median, 2050.25);
  EXPECT_FALSE(vm.read(true).temperature_c);
}

TEST(HostTelemetry, SummaryOfFixtureSamples) {
  const HostReader reader(fixture("bare-metal"), {});
  std::vector<TelemetrySample> samples(3);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    samples[i].t_s = 0.5 * static_cast<double>(i);
    samples[i].host = reader.read();
  }
  samples[1].host.load1 = 4.0;
  const auto s = summarize_telemetry(samples);
  EXPECT_EQ(s["samples"], 3);
  EXPECT_DOUBLE_EQ(s["window_s"].get<double>(), 1.0);
  EXPECT_FALSE(s.contains("gpu"));
  EXPECT_EQ(s["host"]["cpu_mhz"]["min"], 1200);
  EXPECT_EQ(s["host"]["cpu_mhz"]["max"], 3500);
  EXPECT_EQ(s["host"]["cpu_mhz"]["median"], 2750);
  EXPECT_EQ(s["host"]["load1"]["max"], 4.0);
  EXPECT_EQ(s["host"]["load1"]["median"], 1.25);
  EXPECT_EQ(s["host"]["temperature_c"]["max"], 61.0);
  EXPECT_TRUE(s["host"]["unavailable"].empty());
}

// Ranks' clocks start apart (each rank's t_s is since its own sampler started): the combined window is one
// rank's, the first's, never the latest start of one rank with the latest end of another; its duration
// (window_s) is the longest. The ranks that saw a slowdown are named beside the union of the reasons.
TEST(TelemetryCombine, WindowOfTheFirstRankAndTheThrottledRanks) {
  using nlohmann::json;
  const json r0 = {{"samples", 3},
                   {"window_s", 2.0},
                   {"from_s", 0.28},
                   {"to_s", 2.30},
                   {"gpu", {{"available", true}, {"slowdown_reasons", json::array()}}}};
  const json r1 = {{"samples", 3},
                   {"window_s", 2.0},
                   {"from_s", 0.29},
                   {"to_s", 2.31},
                   {"gpu", {{"available", true}, {"slowdown_reasons", {"hw_thermal_slowdown"}}}}};
  const json r2 = {{"samples", 3},
                   {"window_s", 1.0},
                   {"from_s", 0.50},
                   {"to_s", 1.50},
                   {"gpu", {{"available", true}, {"slowdown_reasons", {"hw_power_brake_slowdown"}}}}};
  const std::vector<json> ranks{r0, r1, r2};
  const json c = combine_telemetry(ranks);
  EXPECT_DOUBLE_EQ(c["from_s"].get<double>(), 0.28);  // rank 0's, not rank 1's later start
  EXPECT_DOUBLE_EQ(c["to_s"].get<double>(), 2.30);
  EXPECT_DOUBLE_EQ(c["window_s"].get<double>(), 2.0);
  EXPECT_EQ(c["gpu"]["slowdown_reasons"], json({"hw_power_brake_slowdown", "hw_thermal_slowdown"}));
  EXPECT_EQ(c["gpu"]["slowdown_ranks"], json({1, 2}));
  const std::vector<json> calm{r0, r0};
  EXPECT_EQ(combine_telemetry(calm)["gpu"]["slowdown_ranks"], json::array());
}

// mark() returns the time of the sample it took, with counters, even when the sampling thread adds one
// right after it (the thread waits on the lock while the marked read runs longer than the interval).
TEST(TelemetrySampler, MarkReturnsItsOwnSample) {
  TelemetryOptions options;
  options.mode = TelemetryMode::summary;
  options.interval_s = 1e-3;
  options.counters_interval_s = 1e3;  // the thread's samples never read counters
  TelemetrySampler sampler(
      options,
      [](TelemetrySample&, bool counters) {
        if (counters) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      },
      nlohmann::json::object());
  std::vector<double> marks;
  for (int i = 0; i < 20; ++i) marks.push_back(sampler.mark());
  sampler.stop();
  const auto all = sampler.samples(0, 1e9);
  for (const double t : marks) {
    const auto it =
        std::find_if(all.begin(), all.end(), [&](const TelemetrySample& s) { return s.t_s == t; });
    ASSERT_NE(it, all.end()) << t;
    EXPECT_TRUE(it->counters) << "mark() returned the sampling thread's sample at " << t;
  }
}

// The machine the test runs on: Linux always has loadavg and meminfo, and cpuinfo or cpufreq.
TEST(HostTelemetry, LiveMachine) {
  const auto l = read_loadavg("/");
  ASSERT_TRUE(l);
  EXPECT_GE(l->load1, 0.0);
  EXPECT_GT(l->threads, 0);
  const auto m = read_meminfo("/");
  ASSERT_TRUE(m);
  EXPECT_GT(m->total_bytes, 0u);
  EXPECT_LE(m->available_bytes, m->total_bytes);
  const auto cpus = affinity_cpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_LE(cpus.size(), static_cast<std::size_t>(sysconf(_SC_NPROCESSORS_CONF)));
  const auto mhz = read_cpu_mhz("/", cpus);
  for (const double f : mhz) {
    EXPECT_GT(f, 100.0);
    EXPECT_LT(f, 10000.0);
  }
  for (const auto& z : read_thermal_zones("/")) {
    EXPECT_GT(z.celsius, -50.0) << z.name;
    EXPECT_LT(z.celsius, 150.0) << z.name;
  }
  const HostReader reader("/", cpus);
  const auto r = reader.read(true);
  EXPECT_TRUE(r.load1);
  EXPECT_TRUE(r.mem_available_bytes);
}

}  // namespace
}  // namespace fb::host
