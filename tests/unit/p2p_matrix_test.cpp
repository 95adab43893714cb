#include "workloads/p2p_matrix.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fb::workloads {
namespace {

// n endpoints, every direction at `bw` GB/s.
P2pMatrix uniform(std::size_t n, double bw) {
  P2pMatrix m;
  m.bytes = 1 << 20;
  m.bw_gbps.assign(n, std::vector<double>(n, bw));
  m.latency_us.assign(n, std::vector<double>(n, 5));
  for (std::size_t i = 0; i < n; ++i) m.bw_gbps[i][i] = m.latency_us[i][i] = std::nan("");
  return m;
}

TEST(P2pMatrixTest, UniformMatrixPasses) {
  const auto v = judge_p2p(uniform(8, 10), 0, 0.5);
  EXPECT_TRUE(v.pass());
  EXPECT_DOUBLE_EQ(v.median_gbps, 10);
  EXPECT_TRUE(v.slow_links.empty());
  EXPECT_TRUE(v.slow_endpoints.empty());
}

TEST(P2pMatrixTest, OneSlowLinkIsNamedByBothEndpointsAndNothingElse) {
  auto m = uniform(8, 10);
  m.bw_gbps[2][5] = 1;  // one direction only is enough to name the link
  const auto v = judge_p2p(m, 0, 0.5);
  ASSERT_EQ(v.flags.size(), 1u);
  EXPECT_EQ(v.flags[0].from, 2);
  EXPECT_EQ(v.flags[0].to, 5);
  EXPECT_EQ(v.flags[0].reason, "90% below the median 10 GB/s");
  EXPECT_EQ(v.slow_links, (std::vector<std::pair<int, int>>{{2, 5}}));
  EXPECT_TRUE(v.slow_endpoints.empty());
  EXPECT_EQ(v.flagged_links(), (std::vector<std::pair<int, int>>{{2, 5}}));
}

TEST(P2pMatrixTest, ASlowEndpointIsNamedInsteadOfItsLinks) {
  auto m = uniform(6, 10);
  for (std::size_t j = 0; j < 6; ++j)
    if (j != 3) m.bw_gbps[3][j] = m.bw_gbps[j][3] = 0.5;
  m.bw_gbps[0][1] = 2;  // and an unrelated slow link
  const auto v = judge_p2p(m, 0, 0.5);
  EXPECT_EQ(v.slow_endpoints, (std::vector<int>{3}));
  EXPECT_EQ(v.slow_links, (std::vector<std::pair<int, int>>{{0, 1}}));
}

TEST(P2pMatrixTest, AbsoluteFloorFlagsEvenAUniformMatrix) {
  const auto v = judge_p2p(uniform(3, 10), 40, 0.5);
  EXPECT_EQ(v.flags.size(), 6u);
  EXPECT_EQ(v.flags[0].reason, "below --min-p2p-bw 40 GB/s");
  // Every endpoint is on all of its links: all three are named, no link separately.
  EXPECT_EQ(v.slow_endpoints, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(v.slow_links.empty());
}

TEST(P2pMatrixTest, TwoEndpointsHaveNoRelativeTest) {
  auto m = uniform(2, 10);
  m.bw_gbps[0][1] = 1;
  EXPECT_TRUE(judge_p2p(m, 0, 0.5).pass());
  const auto v = judge_p2p(m, 5, 0.5);
  EXPECT_EQ(v.slow_links, (std::vector<std::pair<int, int>>{{0, 1}}));
}

TEST(P2pMatrixTest, EndpointsPerNodeTakeTheFirstRankOfEachHost) {
  const std::vector<std::string> hosts{"a", "a", "b", "b", "c", "c"};
  const std::vector<int> local{0, 1, 0, 1, 0, 1};
  const auto nodes = p2p_endpoints(P2pScope::node, hosts, local);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[1].rank, 2);
  EXPECT_EQ(nodes[1].host, "b");
  EXPECT_EQ(nodes[1].label(), "b (rank 2, GPU 0)");
  const auto ranks = p2p_endpoints(P2pScope::rank, hosts, local);
  ASSERT_EQ(ranks.size(), 6u);
  EXPECT_EQ(ranks[5].label(), "c (rank 5, GPU 1)");
}

}  // namespace
}  // namespace fb::workloads
