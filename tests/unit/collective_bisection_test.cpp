#include "workloads/collective_bisection.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace fb::workloads {
namespace {

TEST(CollectiveBisectionTest, PlanHalvesDownToSingleNodes) {
  const auto plan = plan_bisection(8);
  ASSERT_EQ(plan.size(), 4u);  // log2(8) + 1 rounds
  EXPECT_EQ(plan[0], (std::vector<NodeGroup>{{0, 8}}));
  EXPECT_EQ(plan[1], (std::vector<NodeGroup>{{0, 4}, {4, 8}}));
  EXPECT_EQ(plan[3].size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(plan[3][static_cast<std::size_t>(i)], (NodeGroup{i, i + 1}));
}

TEST(CollectiveBisectionTest, PlanForOddCountsGivesTheFirstHalfTheExtraNode) {
  const auto plan = plan_bisection(5);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[1], (std::vector<NodeGroup>{{0, 3}, {3, 5}}));
  EXPECT_EQ(plan[2], (std::vector<NodeGroup>{{0, 2}, {2, 3}, {3, 4}, {4, 5}}));
  EXPECT_EQ(plan[3].size(), 5u);
  EXPECT_EQ(plan_bisection(1).size(), 1u);
  EXPECT_TRUE(plan_bisection(0).empty());
}

// Measurements for a plan: every group at `bw`, except groups containing `slow` at `slow_bw`.
std::vector<std::vector<GroupMeasurement>> measured(int nodes, int slow, double bw, double slow_bw) {
  std::vector<std::vector<GroupMeasurement>> rounds;
  for (const auto& groups : plan_bisection(nodes)) {
    std::vector<GroupMeasurement> round;
    for (const auto& g : groups)
      round.push_back({g, 2 * g.size(), slow >= g.first && slow < g.last ? slow_bw : bw, false});
    rounds.push_back(round);
  }
  return rounds;
}

TEST(CollectiveBisectionTest, NamesTheOneNodeThatDragsEveryGroupItIsIn) {
  auto rounds = measured(4, 1, 100, 2);
  const auto v = judge_bisection(rounds, 0, 0, 0.5);
  EXPECT_EQ(v.nodes, (std::vector<int>{1}));
  EXPECT_FALSE(rounds[0][0].below_floor);  // one group: no relative test, no floor given
  EXPECT_TRUE(rounds[1][0].below_floor);
  EXPECT_FALSE(rounds[1][1].below_floor);
  EXPECT_TRUE(rounds[2][1].below_floor);
}

TEST(CollectiveBisectionTest, HealthyJobNamesNobody) {
  auto rounds = measured(8, -1, 100, 0);
  EXPECT_TRUE(judge_bisection(rounds, 50, 50, 0.5).nodes.empty());
}

TEST(CollectiveBisectionTest, AbsoluteFloorFailsTheJobAndGroupsButNamesOnlyTheSmallest) {
  // Everything below the floor: the smallest groups below it are the single nodes, so all are named.
  auto rounds = measured(4, -1, 10, 0);
  EXPECT_EQ(judge_bisection(rounds, 50, 50, 0.5).nodes, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CollectiveBisectionTest, NodeAndNetworkFloorsApplyToTheirGroups) {
  // 100 GB/s: above a 40 GB/s network floor, below a 431 GB/s single-node floor.
  auto rounds = measured(2, -1, 100, 0);
  EXPECT_EQ(judge_bisection(rounds, 431, 40, 0.5).nodes, (std::vector<int>{0, 1}));
  EXPECT_FALSE(rounds[0][0].below_floor);
  auto again = measured(2, -1, 100, 0);
  EXPECT_TRUE(judge_bisection(again, 50, 40, 0.5).nodes.empty());
}

TEST(CollectiveBisectionTest, ASlowPairWithHealthyHalvesNamesBothNodes) {
  // Nodes 2 and 3 are fine alone but slow together (the link between them): the pair is named.
  auto rounds = measured(4, -1, 100, 0);
  rounds[1][1].busbw_gbps = 5;
  EXPECT_EQ(judge_bisection(rounds, 0, 0, 0.5).nodes, (std::vector<int>{2, 3}));
}

// Three nodes halve into {0,1} and {2}: a healthy cluster's network pair (40 GB/s) is not held to the median
// it would share with a node alone over NVLink (400 GB/s); a slow node is still found among the nodes alone.
TEST(CollectiveBisectionTest, UnevenHalvesCompareNodesWithNodesAndNetworkGroupsWithTheirOwn) {
  const auto fabric = [](int slow) {
    std::vector<std::vector<GroupMeasurement>> rounds;
    for (const auto& groups : plan_bisection(3)) {
      std::vector<GroupMeasurement> round;
      for (const auto& g : groups) {
        const bool has_slow = slow >= g.first && slow < g.last;
        round.push_back({g, 2 * g.size(), (g.size() == 1 ? 400.0 : 40.0) / (has_slow ? 50 : 1), false});
      }
      rounds.push_back(round);
    }
    return rounds;
  };
  auto healthy = fabric(-1);
  EXPECT_TRUE(judge_bisection(healthy, 0, 0, 0.5).nodes.empty());
  EXPECT_FALSE(healthy[1][0].below_floor);  // {0,1} at 40 GB/s next to {2} at 400
  for (int slow : {0, 2}) {
    auto rounds = fabric(slow);
    EXPECT_EQ(judge_bisection(rounds, 0, 0, 0.5).nodes, (std::vector<int>{slow})) << "slow node " << slow;
  }
  // Nodes 3 and 4 of five, slow together: the pair is judged against the round's other pair and named.
  auto five = measured(5, -1, 100, 0);
  ASSERT_EQ(five[1][1].group, (NodeGroup{3, 5}));
  five[1][1].busbw_gbps = 5;
  EXPECT_EQ(judge_bisection(five, 0, 0, 0.5).nodes, (std::vector<int>{3, 4}));
}

TEST(CollectiveBisectionTest, SingleRankGroupsAreNotJudged) {
  auto rounds = measured(2, 1, 100, 2);
  rounds[1][0].busbw_gbps = rounds[1][1].busbw_gbps = std::nan("");
  EXPECT_TRUE(judge_bisection(rounds, 0, 0, 0.5).nodes.empty());
}

// The audit's case: 5 nodes, node 0 slow. Round 2's {0,1} is the only multi-node group of its round (no
// relative test), but node 0 alone is below the others in round 3: only node 0 is named (it named 0, 1, 2).
TEST(CollectiveBisectionTest, AnUnjudgedSubgroupDoesNotNameItsWholeParent) {
  auto rounds = measured(5, 0, 100, 2);
  EXPECT_EQ(judge_bisection(rounds, 0, 0, 0.5).nodes, (std::vector<int>{0}));
  // 8 nodes, one slow: still only that one.
  auto eight = measured(8, 5, 100, 2);
  EXPECT_EQ(judge_bisection(eight, 0, 0, 0.5).nodes, (std::vector<int>{5}));
}

// A single node measured in several rounds keeps its best figure: one noisy repeat does not name it.
TEST(CollectiveBisectionTest, ARepeatedSingleNodeKeepsItsBestFigure) {
  auto rounds = measured(3, -1, 100, 0);  // {0,1},{2} then {0},{1},{2}: node 2 is measured twice
  ASSERT_EQ(rounds[1][1].group, (NodeGroup{2, 3}));
  rounds[1][1].busbw_gbps = 10;  // a stall in round 2; round 3's 100 is its figure
  EXPECT_TRUE(judge_bisection(rounds, 0, 0, 0.5).nodes.empty());
  EXPECT_DOUBLE_EQ(rounds[1][1].busbw_gbps, 100);
}

// One rank per node: single nodes are n/a, so a slow node 1 of 4 is named with its pair partner 0.
std::vector<std::vector<GroupMeasurement>> one_rank_per_node(int nodes, int slow) {
  auto rounds = measured(nodes, slow, 100, 2);
  for (auto& round : rounds)
    for (auto& m : round) {
      m.ranks = m.group.size();
      if (m.group.size() == 1) m.busbw_gbps = std::nan("");
    }
  return rounds;
}

TEST(CollectiveBisectionTest, OneRankPerNodeNamesThePairAndPlansACrossCheck) {
  auto rounds = one_rank_per_node(4, 1);
  const auto v = judge_bisection(rounds, 0, 0, 0.5);
  ASSERT_EQ(v.nodes, (std::vector<int>{0, 1}));
  const auto pairs = plan_cross_pairs(rounds, v, 4);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].suspect, 0);
  EXPECT_EQ(pairs[0].partner, 2);
  EXPECT_EQ(pairs[1].suspect, 1);
  EXPECT_EQ(pairs[1].partner, 3);
  EXPECT_TRUE(std::isnan(pairs[0].busbw_gbps));
  // Nodes measured alone need no cross-check: with two ranks per node the bisection names node 1 itself.
  auto two_ranks = measured(4, 1, 100, 2);
  const auto v2 = judge_bisection(two_ranks, 0, 0, 0.5);
  EXPECT_EQ(v2.nodes, (std::vector<int>{1}));
  EXPECT_TRUE(plan_cross_pairs(two_ranks, v2, 4).empty());
  EXPECT_TRUE(plan_cross_pairs(rounds, BisectionVerdict{}, 4).empty());
}

TEST(CollectiveBisectionTest, CrossCheckClearsThePartnerOfTheSlowNode) {
  auto rounds = one_rank_per_node(4, 1);
  const auto v = judge_bisection(rounds, 0, 0, 0.5);
  auto pairs = plan_cross_pairs(rounds, v, 4);
  pairs[0].busbw_gbps = 95;  // {0, 2}: healthy, like the passing pair {2, 3} at 100
  pairs[1].busbw_gbps = 2;   // {1, 3}: node 1 drags it down
  EXPECT_EQ(judge_cross_pairs(pairs, rounds, v, 0, 0.5).nodes, (std::vector<int>{1}));
  EXPECT_FALSE(pairs[0].below_floor);
  EXPECT_TRUE(pairs[1].below_floor);
  // An absolute network floor applies to the cross pairs too.
  auto floored = plan_cross_pairs(rounds, v, 4);
  floored[0].busbw_gbps = 95;
  floored[1].busbw_gbps = 60;  // within the relative threshold of 100, below a 80 GB/s floor
  EXPECT_EQ(judge_cross_pairs(floored, rounds, v, 80, 0.5).nodes, (std::vector<int>{1}));
}

TEST(CollectiveBisectionTest, CrossCheckKeepsAPairThatIsSlowOnlyTogether) {
  // The link between nodes 2 and 3: each is fine with another node, so both stay named.
  auto rounds = one_rank_per_node(4, -1);
  rounds[1][1].busbw_gbps = 5;
  const auto v = judge_bisection(rounds, 0, 0, 0.5);
  ASSERT_EQ(v.nodes, (std::vector<int>{2, 3}));
  auto pairs = plan_cross_pairs(rounds, v, 4);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].partner, 0);
  pairs[0].busbw_gbps = pairs[1].busbw_gbps = 100;
  EXPECT_EQ(judge_cross_pairs(pairs, rounds, v, 0, 0.5).nodes, (std::vector<int>{2, 3}));
  // A pair that could not be measured clears nobody.
  auto unmeasured = plan_cross_pairs(rounds, v, 4);
  EXPECT_EQ(judge_cross_pairs(unmeasured, rounds, v, 0, 0.5).nodes, (std::vector<int>{2, 3}));
}

TEST(CollectiveBisectionTest, FewerUnnamedNodesThanSuspectsArePairedAgainInLaterBatches) {
  // 3 nodes, one rank each, node 0 slow: the pair {0, 1} is below the absolute floor and node 2 is the only
  // partner. Both suspects are measured with it, one batch after the other; node 1 is cleared, not named on
  // no evidence.
  auto rounds = one_rank_per_node(3, -1);
  rounds[1][0].busbw_gbps = 10;  // {0, 1}
  const auto v = judge_bisection(rounds, 0, 50, 0.5);
  ASSERT_EQ(v.nodes, (std::vector<int>{0, 1}));
  auto pairs = plan_cross_pairs(rounds, v, 3);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].suspect, 0);
  EXPECT_EQ(pairs[0].partner, 2);
  EXPECT_EQ(pairs[0].batch, 0);
  EXPECT_EQ(pairs[1].suspect, 1);
  EXPECT_EQ(pairs[1].partner, 2);
  EXPECT_EQ(pairs[1].batch, 1);
  pairs[0].busbw_gbps = 8;   // {0, 2}: node 0 drags it down
  pairs[1].busbw_gbps = 90;  // {1, 2}: healthy
  EXPECT_EQ(judge_cross_pairs(pairs, rounds, v, 50, 0.5).nodes, (std::vector<int>{0}));
}

// The audit's case: 3 nodes of one rank each, the third slow, a network floor: {0,1} passed, {2} could not be
// measured alone, the job's group failed. The passing pair clears nodes 0 and 1: node 2 alone is named (all
// three were, with no unnamed node left to cross-check them against), and is cross-checked with node 0.
TEST(CollectiveBisectionTest, APassingNetworkedGroupClearsItsNodes) {
  auto rounds = one_rank_per_node(3, 2);
  ASSERT_EQ(rounds[1][0].group, (NodeGroup{0, 2}));
  const auto v = judge_bisection(rounds, 0, 50, 0.5);
  EXPECT_EQ(v.nodes, (std::vector<int>{2}));
  const auto pairs = plan_cross_pairs(rounds, v, 3);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].suspect, 2);
  EXPECT_EQ(pairs[0].partner, 0);
  // Two ranks per node and a slow NIC on node 2: node 2 alone is healthy (its all-reduce crosses no
  // network), so only the job's group is slow. {0,1} clears nodes 0 and 1; node 2's own figure clears
  // nothing: node 2 is named.
  auto nic = measured(3, -1, 100, 0);
  nic[0][0].busbw_gbps = 10;  // the job's group crosses node 2's NIC
  EXPECT_EQ(judge_bisection(nic, 0, 50, 0.5).nodes, (std::vector<int>{2}));
  // Every node cleared by a passing half: the problem lies between the halves; all are named, as before.
  auto between = measured(4, -1, 100, 0);
  between[0][0].busbw_gbps = 10;
  EXPECT_EQ(judge_bisection(between, 0, 50, 0.5).nodes, (std::vector<int>{0, 1, 2, 3}));
}

TEST(CollectiveBisectionTest, CrossCheckNeedsNodesThatWereNotNamed) {
  // Both of two nodes named (absolute floor): nobody to pair them with.
  auto rounds = one_rank_per_node(2, -1);
  rounds[0][0].busbw_gbps = 10;
  const auto v = judge_bisection(rounds, 0, 50, 0.5);
  ASSERT_EQ(v.nodes, (std::vector<int>{0, 1}));
  EXPECT_TRUE(plan_cross_pairs(rounds, v, 2).empty());
}

}  // namespace
}  // namespace fb::workloads
