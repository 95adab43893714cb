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
  EXPECT_EQ(v.flags[0].reason, "90% below the reference 10 GB/s");
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

TEST(P2pMatrixTest, ASlowEndpointAmongThreeIsNamedThoughItsDirectionsAreTheMajority) {
  // Rank 1 of 3 slow (locate on 3 ranks, slow-rank@rank=1): 4 of the 6 directions touch it, so the median
  // of all directions is the slow figure; each healthy endpoint's best direction is still fast.
  auto m = uniform(3, 8);
  for (std::size_t j : {0, 2}) m.bw_gbps[1][j] = m.bw_gbps[j][1] = 0.0258;
  m.bw_gbps[0][2] = 7.22;
  const auto v = judge_p2p(m, 0, 0.5);
  EXPECT_DOUBLE_EQ(v.median_gbps, 0.0258);
  EXPECT_DOUBLE_EQ(v.reference_gbps, 8);  // best of 0: 8 (2→0), of 1: 0.0258, of 2: 8
  EXPECT_EQ(v.slow_endpoints, (std::vector<int>{1}));
  EXPECT_TRUE(v.slow_links.empty());
  EXPECT_EQ(v.flags.size(), 4u);
}

TEST(P2pMatrixTest, ASlowEndpointAndASlowLinkTogetherAmongFour) {
  // slow-rank@rank=3 and slow-link@ranks=0-1 on 4 ranks: 8 of 12 directions slow.
  auto m = uniform(4, 9);
  for (std::size_t j : {0, 1, 2}) m.bw_gbps[3][j] = m.bw_gbps[j][3] = 0.03;
  m.bw_gbps[0][1] = m.bw_gbps[1][0] = 0.03;
  const auto v = judge_p2p(m, 0, 0.5);
  EXPECT_DOUBLE_EQ(v.reference_gbps, 9);
  EXPECT_EQ(v.slow_endpoints, (std::vector<int>{3}));
  EXPECT_EQ(v.slow_links, (std::vector<std::pair<int, int>>{{0, 1}}));
}

TEST(P2pMatrixTest, AbsoluteFloorFlagsEvenAUniformMatrix) {
  const auto v = judge_p2p(uniform(3, 10), 40, 0.5);
  EXPECT_EQ(v.flags.size(), 6u);
  EXPECT_EQ(v.flags[0].reason, "below --min-p2p-bw 40 GB/s");
  // A floor from --floors is named as such (it read "--min-p2p-bw", an option not given).
  EXPECT_EQ(judge_p2p(uniform(3, 10), 40, 0.5, "--floors network-400g's p2p floor").flags[0].reason,
            "below --floors network-400g's p2p floor 40 GB/s");
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
