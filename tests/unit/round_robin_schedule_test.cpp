#include "workloads/round_robin_schedule.hpp"

#include <gtest/gtest.h>

#include <set>

namespace fb::workloads {
namespace {

// Every pair exactly once, nobody twice in a round, N−1 rounds for even N and N for odd N.
void check_tournament(int n) {
  const auto rounds = round_robin_schedule(n);
  ASSERT_EQ(static_cast<int>(rounds.size()), n % 2 == 0 ? n - 1 : n) << "n = " << n;
  std::set<Pair> seen;
  for (const auto& round : rounds) {
    std::set<int> busy;
    EXPECT_EQ(static_cast<int>(round.size()), n / 2) << "n = " << n;
    for (const auto& [a, b] : round) {
      EXPECT_LT(a, b);
      EXPECT_GE(a, 0);
      EXPECT_LT(b, n);
      EXPECT_TRUE(busy.insert(a).second) << a << " twice in a round, n = " << n;
      EXPECT_TRUE(busy.insert(b).second) << b << " twice in a round, n = " << n;
      EXPECT_TRUE(seen.insert({a, b}).second) << a << "-" << b << " measured twice, n = " << n;
    }
    // Odd n: exactly one endpoint has a bye.
    EXPECT_EQ(static_cast<int>(busy.size()), n - n % 2);
  }
  EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1) / 2) << "n = " << n;
}

TEST(RoundRobinScheduleTest, EveryPairOnceNoEndpointTwiceInARound) {
  for (int n = 2; n <= 33; ++n) check_tournament(n);
}

TEST(RoundRobinScheduleTest, OddCountGivesEachEndpointOneBye) {
  const auto rounds = round_robin_schedule(5);
  std::multiset<int> byes;
  for (const auto& round : rounds) {
    std::set<int> busy;
    for (const auto& [a, b] : round) busy.insert({a, b});
    for (int e = 0; e < 5; ++e)
      if (!busy.count(e)) byes.insert(e);
  }
  EXPECT_EQ(byes, (std::multiset<int>{0, 1, 2, 3, 4}));
}

TEST(RoundRobinScheduleTest, FourEndpointsKnownSchedule) {
  const auto rounds = round_robin_schedule(4);
  ASSERT_EQ(rounds.size(), 3u);
  EXPECT_EQ(rounds[0], (std::vector<Pair>{{0, 3}, {1, 2}}));
  EXPECT_EQ(rounds[1], (std::vector<Pair>{{0, 2}, {1, 3}}));
  EXPECT_EQ(rounds[2], (std::vector<Pair>{{0, 1}, {2, 3}}));
}

TEST(RoundRobinScheduleTest, FewerThanTwoEndpointsHaveNoRounds) {
  EXPECT_TRUE(round_robin_schedule(0).empty());
  EXPECT_TRUE(round_robin_schedule(1).empty());
}

}  // namespace
}  // namespace fb::workloads
