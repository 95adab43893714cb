// FLOP, TFLOP/s and MFU arithmetic, and the slow-rank detector, against hand-computed answers.
#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "workloads/gemm_flops.hpp"

using namespace fb::workloads;

TEST(GemmFlops, TwoMnk) {
  EXPECT_DOUBLE_EQ(gemm_flops(1024, 1024, 1024), 2147483648.0);     // 2·2^30
  EXPECT_DOUBLE_EQ(gemm_flops(8192, 8192, 8192), 1099511627776.0);  // 2·2^39 = 1.0995e12
  EXPECT_DOUBLE_EQ(gemm_flops(4096, 14336, 4096, 1), 2.0 * 4096 * 14336 * 4096);
  EXPECT_DOUBLE_EQ(gemm_flops(128, 256, 64, 8), 2.0 * 128 * 256 * 64 * 8);  // batch multiplies
}

TEST(GemmFlops, NoOverflowForHugeShapes) {
  // 2^31 cubed overflows 64-bit integers; the count is done in double.
  EXPECT_DOUBLE_EQ(gemm_flops(1LL << 31, 1LL << 31, 1LL << 31), 0x1p94);
}

TEST(GemmFlops, Tflops) {
  // 8192³ in 1.4 ms: 1.0995e12 / 1.4e-3 / 1e12 = 785.4 TFLOP/s (the PyTorch H200 range).
  EXPECT_NEAR(tflops(gemm_flops(8192, 8192, 8192), 1.4e-3), 785.36, 0.01);
  EXPECT_DOUBLE_EQ(tflops(2e12, 2.0), 1.0);
  EXPECT_THROW(tflops(1e9, 0.0), fb::Error);
  EXPECT_THROW(tflops(1e9, -1.0), fb::Error);
}

TEST(GemmFlops, Mfu) {
  EXPECT_NEAR(mfu(794.5, 989), 0.8033, 1e-4);  // MAMF H100 bf16: 80.3% of 989
  EXPECT_NEAR(mfu(1745, 2250), 0.7756, 1e-4);  // B200 bf16: 77.6%
  EXPECT_DOUBLE_EQ(mfu(0, 989), 0.0);
  EXPECT_THROW(mfu(100, 0), fb::Error);
}

TEST(GemmFlops, MedianOf) {
  EXPECT_DOUBLE_EQ(median_of(std::vector<double>{3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median_of(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median_of(std::vector<double>{}), 0.0);
}

TEST(SlowRanks, FlagsRanksBelowMedianByMoreThanThreshold) {
  // Sorted: 650 669 700 705 710 715 720 730; median (705 + 710)/2 = 707.5; limit at 5% = 672.125.
  const std::vector<double> t{700, 710, 720, 650, 705, 730, 669, 715};
  EXPECT_EQ(slow_ranks(t, 0.05), (std::vector<int>{3, 6}));
  // At 10% the limit is 636.75: neither 650 nor 669 is below it.
  EXPECT_TRUE(slow_ranks(t, 0.10).empty());
}

TEST(SlowRanks, ExactlyAtTheLimitIsNotSlow) {
  const std::vector<double> t{100, 100, 95};  // median 100, limit 95
  EXPECT_TRUE(slow_ranks(t, 0.05).empty());
  EXPECT_EQ(slow_ranks(std::vector<double>{100, 100, 94.9}, 0.05), (std::vector<int>{2}));
}

TEST(SlowRanks, SingleRankNeverSlow) {
  EXPECT_TRUE(slow_ranks(std::vector<double>{1.0}, 0.05).empty());
  EXPECT_TRUE(slow_ranks(std::vector<double>{}, 0.05).empty());
}
