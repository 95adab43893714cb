// The shared measurement loop on the host backend: how many times it runs the iteration, which buffer set
// each run gets, when it settles, and how many sets rotation asks for.
#include <gtest/gtest.h>

#include <vector>

#include "core/host_backend.hpp"
#include "workloads/measurement_loop.hpp"

namespace fb::workloads {
namespace {

TEST(MeasurementLoop, WarmupThenTimedIterationsRotateThroughTheSets) {
  HostBackend backend;
  MeasureLoop loop;
  loop.warmup = 2;
  loop.iters = 5;
  loop.buffers = 3;
  std::vector<int> seen;
  int settled = 0;
  loop.before_timing = [&] {
    EXPECT_EQ(seen.size(), 2u);  // after the warm-up, before any timed run
    ++settled;
  };
  loop.after_timing = [&] { ++settled; };
  // Progress after every iteration, warm-up and timed alike, each after its own iteration ran.
  std::vector<std::pair<int, int>> ticks;
  loop.on_iteration = [&](int done, int total) {
    EXPECT_EQ(static_cast<std::size_t>(done), seen.size());
    ticks.emplace_back(done, total);
  };
  const Measurement m = measure(backend, loop, [&](int buffer) { seen.push_back(buffer); });
  ASSERT_EQ(ticks.size(), 7u);
  EXPECT_EQ(ticks.front(), std::make_pair(1, 7));
  EXPECT_EQ(ticks.back(), std::make_pair(7, 7));
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));  // iteration i uses set i mod 3
  EXPECT_EQ(settled, 2);
  ASSERT_EQ(m.seconds.size(), 5u);
  EXPECT_EQ(m.stats.n, 5u);
  for (const double s : m.seconds) EXPECT_GE(s, 0.0);
  EXPECT_GE(m.cpu_seconds, 0.0);
}

// Valid but thin loops are run, with a warning that says what they lose; the defaults draw none.
TEST(MeasurementLoop, FewSamplesAreNamed) {
  EXPECT_EQ(few_samples_warning(20, 5), "");
  EXPECT_EQ(few_samples_warning(3, 1), "");
  EXPECT_EQ(
      few_samples_warning(1, 5),
      "--iters 1: 1 timed sample(s) per case, so no spread and a median of that one sample (use 3 or more)");
  EXPECT_EQ(
      few_samples_warning(2, 0),
      "--iters 2: 2 timed sample(s) per case, so no spread and a median of two (use 3 or more); --warmup 0: "
      "the first timed call includes start-up (plans, caches, page faults)");
  EXPECT_EQ(few_samples_warning(10, 0),
            "--warmup 0: the first timed call includes start-up (plans, caches, page faults)");
}

TEST(MeasurementLoop, RotationSets) {
  const std::uint64_t MiB = 1 << 20;
  EXPECT_EQ(rotation_sets(0, 32 * MiB, 1024 * MiB), 1);
  EXPECT_EQ(rotation_sets(4 * MiB, 32 * MiB, 1024 * MiB), 10);  // 32/4 + 2 sets leave the cache
  EXPECT_EQ(rotation_sets(1024 * MiB, 32 * MiB, 1 << 30), 1);   // memory for one set only
  EXPECT_EQ(rotation_sets(1, 32 * MiB, 1024 * MiB), 64);        // at most 64
  EXPECT_EQ(rotation_sets(64 * MiB, 32 * MiB, 1024 * MiB), 2);  // at least 2
}

}  // namespace
}  // namespace fb::workloads
