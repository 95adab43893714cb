#include "workloads/burnin.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace fb::workloads {
namespace {

RankChecks ranked(int rank, std::vector<std::uint64_t> sums, std::string device = "NVIDIA H200") {
  RankChecks r;
  r.rank = rank;
  r.host = "node" + std::to_string(rank / 2);
  r.device = std::move(device);
  r.checksums = std::move(sums);
  for (std::size_t i = 0; i < r.checksums.size(); ++i) r.at_s.push_back(10.0 * static_cast<double>(i));
  return r;
}

TEST(BurninTest, ChecksumIsFnv1a64) {
  EXPECT_EQ(checksum_bytes("", 0), 0xcbf29ce484222325ull);   // the FNV offset basis
  EXPECT_EQ(checksum_bytes("a", 1), 0xaf63dc4c8601ec8cull);  // published FNV-1a 64 test vector
  const float x[2] = {1.0f, 2.0f};
  float y[2] = {1.0f, 2.0f};
  EXPECT_EQ(checksum_bytes(x, sizeof x), checksum_bytes(y, sizeof y));
  y[1] = std::nextafter(y[1], 3.0f);  // one bit
  EXPECT_NE(checksum_bytes(x, sizeof x), checksum_bytes(y, sizeof y));
}

TEST(BurninTest, IdenticalChecksumsPass) {
  EXPECT_TRUE(judge_burnin({ranked(0, {7, 7, 7}), ranked(1, {7, 7, 7}), ranked(2, {7, 7, 7})}).empty());
}

TEST(BurninTest, ARepeatThatChangesNamesTheRankAndWhenItWasFirstSeen) {
  const auto p = judge_burnin({ranked(0, {7, 7, 7}), ranked(1, {7, 9, 9}), ranked(2, {7, 7, 7})});
  ASSERT_EQ(p.size(), 1u);  // reported once, at the first check it was seen
  EXPECT_EQ(p[0].rank, 1);
  EXPECT_EQ(p[0].check, 1);
  EXPECT_DOUBLE_EQ(p[0].first_seen_s, 10);
  EXPECT_EQ(p[0].reason,
            "checksum 0000000000000009 at check 1 differs from its own first result 0000000000000007");
}

TEST(BurninTest, ARankWrongFromTheStartDisagreesWithTheMajorityOfItsModel) {
  const auto p = judge_burnin({ranked(0, {7, 7}), ranked(1, {7, 7}), ranked(2, {5, 5})});
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rank, 2);
  EXPECT_EQ(p[0].check, 0);
  EXPECT_EQ(
      p[0].reason,
      "checksum 0000000000000005 at check 0 differs from 0000000000000007 of 2 other NVIDIA H200 rank(s)");
}

// A run judges each check once, as it is gathered (workloads/burnin.cpp): that must find what judging the
// whole table at the end finds, in the same order. Rank 1 repeats wrongly from check 2 on (one problem), rank
// 3 is wrong from the start and again later (one problem, at check 0).
TEST(BurninTest, JudgingEachCheckAsItIsGatheredFindsWhatTheWholeTableDoes) {
  const std::vector<RankChecks> whole = {ranked(0, {7, 7, 7, 7, 7}), ranked(1, {7, 7, 8, 8, 7}),
                                         ranked(2, {7, 7, 7, 7, 7}), ranked(3, {5, 5, 6, 5, 5}),
                                         ranked(4, {7, 7, 7, 7, 7}), ranked(5, {7, 7, 7, 7, 7})};
  auto growing = whole;
  for (auto& r : growing) r.checksums.clear(), r.at_s.clear();
  std::set<int> reported;
  std::vector<BurninProblem> found;
  for (std::size_t c = 0; c < 5; ++c) {
    for (std::size_t i = 0; i < whole.size(); ++i) {
      growing[i].checksums.push_back(whole[i].checksums[c]);
      growing[i].at_s.push_back(whole[i].at_s[c]);
    }
    judge_burnin_check(growing, c, reported, found);
  }
  const auto expected = judge_burnin(whole);
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_EQ(expected[0].rank, 3);
  EXPECT_EQ(expected[0].check, 0);
  EXPECT_EQ(expected[1].rank, 1);
  EXPECT_EQ(expected[1].check, 2);
  ASSERT_EQ(found.size(), expected.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].rank, expected[i].rank);
    EXPECT_EQ(found[i].check, expected[i].check);
    EXPECT_DOUBLE_EQ(found[i].first_seen_s, expected[i].first_seen_s);
    EXPECT_EQ(found[i].reason, expected[i].reason);
  }
  EXPECT_EQ(reported, (std::set<int>{1, 3}));
}

// Two ranks that disagree from the start (one GPU computing a bit wrong every time): no majority to blame
// one, so both fail, rather than the job passing. Likewise two against two.
TEST(BurninTest, RanksThatDisagreeWithNoMajorityAllFail) {
  const auto two = judge_burnin({ranked(0, {7, 7, 7}), ranked(1, {5, 5, 5})});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].rank, 0);
  EXPECT_EQ(two[1].rank, 1);
  EXPECT_EQ(two[0].check, 0);
  EXPECT_EQ(
      two[1].reason,
      "checksum 0000000000000005 at check 0: the 2 NVIDIA H200 rank(s) disagree with no majority (2 distinct "
      "results), so the wrong one cannot be told apart");
  EXPECT_EQ(judge_burnin({ranked(0, {7}), ranked(1, {7}), ranked(2, {5}), ranked(3, {5})}).size(), 4u);
  // A rank whose result changed is blamed for that alone: its peer, which repeats its own, is not in a tie.
  const auto changed = judge_burnin({ranked(0, {7, 7, 7}), ranked(1, {7, 9, 9})});
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].rank, 1);
}

// The majority is of the ranks of one model: one H100 wrong among four, beside four H200s, is named (it was
// judged against all eight ranks, 3 of 8 being no majority, and passed).
TEST(BurninTest, TheMajorityIsOfTheRanksOfOneModel) {
  std::vector<RankChecks> job;
  for (int r = 0; r < 4; ++r) job.push_back(ranked(r, {r == 1 ? 5u : 7u, r == 1 ? 5u : 7u}, "NVIDIA H100"));
  for (int r = 4; r < 8; ++r) job.push_back(ranked(r, {3, 3}));
  const auto p = judge_burnin(job);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rank, 1);
  EXPECT_EQ(
      p[0].reason,
      "checksum 0000000000000005 at check 0 differs from 0000000000000007 of 3 other NVIDIA H100 rank(s)");
}

TEST(BurninTest, DifferentDeviceModelsAreNotCompared) {
  EXPECT_TRUE(judge_burnin({ranked(0, {7, 7}), ranked(1, {7, 7}), ranked(2, {5, 5}, "NVIDIA B200")}).empty());
}

// Healthy peers must compute the same bits: one OpenBLAS thread on host, and on cuda the heuristic's first
// algorithm rather than each rank's autotuned fastest (ranks could keep different kernels).
TEST(BurninTest, EngineChoiceDependsOnlyOnTheDeviceAndInputs) {
  const auto eo = burnin_engine_options(8);
  EXPECT_EQ(eo.autotune, 1);
  EXPECT_EQ(eo.host_threads, 1);
  EXPECT_EQ(eo.local_ranks, 8);
}

}  // namespace
}  // namespace fb::workloads
