// The train step's breakdown: the categories a report carries and the timer that charges a step to them.
#include <gtest/gtest.h>

#include <numeric>

#include "core/host_backend.hpp"
#include "workloads/train/step_breakdown.hpp"

namespace fb::workloads::train {
namespace {

TEST(TrainStepBreakdown, CategoriesInStackingOrderOnePerCat) {
  const auto& names = breakdown_categories();
  ASSERT_EQ(names.size(), static_cast<std::size_t>(kCats));
  EXPECT_EQ(names[kGemm], "gemm");
  EXPECT_EQ(names[kAttention], "attention");
  EXPECT_EQ(names[kMoeRouting], "moe_dispatch_combine");
  EXPECT_EQ(names[kElementwise], "elementwise");
  EXPECT_EQ(names[kTpComm], "exposed_tp_comm");
  EXPECT_EQ(names[kEpComm], "exposed_ep_comm");
  EXPECT_EQ(names[kDpComm], "exposed_dp_comm");
  EXPECT_EQ(names[kOptimizer], "optimizer");
  EXPECT_EQ(names[kBubble], "pipeline_bubble");
}

TEST(TrainStepBreakdown, ComputeIsGemmAttentionElementwiseAndRouting) {
  CatSeconds s{};
  for (int c = 0; c < kCats; ++c) s[c] = 1 << c;  // distinct bits: the sum says which categories count
  EXPECT_EQ(compute_seconds(s), (1 << kGemm) + (1 << kAttention) + (1 << kElementwise) + (1 << kMoeRouting));
}

TEST(TrainStepBreakdown, EveryStretchIsChargedToExactlyOneCategory) {
  HostBackend backend;
  StepTimer timer(backend);
  timer.start(true);
  volatile double sink = 0;
  for (int round = 0; round < 3; ++round)
    for (int c = 0; c < kCats; ++c) {
      timer.mark(static_cast<Cat>(c));
      for (int i = 0; i < 1000; ++i) sink = sink + i;
    }
  const double total = timer.stop();
  const auto& s = timer.seconds();
  EXPECT_NEAR(std::accumulate(s.begin(), s.end(), 0.0), total, 1e-9);
  for (double v : s) EXPECT_GE(v, 0.0);
  // A new step starts from zero and charges elementwise until the first mark.
  timer.start(false);
  const double empty = timer.stop();
  for (int c = 0; c < kCats; ++c)
    if (c != kElementwise) {
      EXPECT_EQ(timer.seconds()[c], 0.0) << breakdown_categories()[c];
    }
  EXPECT_EQ(timer.seconds()[kElementwise], empty);
}

}  // namespace
}  // namespace fb::workloads::train
