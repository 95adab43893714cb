// The host peak's core count per rank (workloads/device_peak.hpp): the rank's share of the node's cores,
// never below one core.
#include <gtest/gtest.h>

#include "workloads/device_peak.hpp"

namespace fb::workloads {
namespace {

TEST(HostCoresPerRank, ShareOfTheCoresWhenEachRankHasOneOrMore) {
  EXPECT_DOUBLE_EQ(host_cores_per_rank(2, 2, 2), 1.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(2, 2, 1), 2.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(16, 16, 8), 2.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(12, 12, 8), 1.5);
}

TEST(HostCoresPerRank, OneCoreWhenRanksOutnumberTheCores) {
  // The quickstart's 4 ranks on 2 cores counted half a core each and reported a GEMM at MFU 164%.
  EXPECT_DOUBLE_EQ(host_cores_per_rank(2, 2, 4), 1.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(2, 2, 3), 1.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(1, 1, 8), 1.0);
}

// mpirun binds each rank to one core by default (also at -np 1): OpenBLAS then runs one thread, and the peak
// of the node's share read MFU 42% for a GEMM at 85% of one core.
TEST(HostCoresPerRank, TheAffinityMaskWhenBoundToFewerCores) {
  EXPECT_DOUBLE_EQ(host_cores_per_rank(2, 1, 1), 1.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(64, 8, 8), 8.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(64, 4, 2), 4.0);
  EXPECT_DOUBLE_EQ(host_cores_per_rank(8, 0, 2), 4.0);  // mask unknown: the share
}

TEST(HostCoresPerRank, NoRanksCountsAsOne) {
  EXPECT_DOUBLE_EQ(host_cores_per_rank(4, 4, 0), 4.0);
}

}  // namespace
}  // namespace fb::workloads
