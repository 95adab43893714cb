#include "core/hang_watchdog.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

namespace fb {
namespace {

RankCallRecord rec(int rank, std::uint64_t entered, std::uint64_t left, double in_call_s, bool done = false) {
  RankCallRecord r;
  r.rank = rank;
  r.host = "node" + std::to_string(rank / 2);
  r.local_rank = rank % 2;
  r.call.entered = entered;
  r.call.left = left;
  r.call.op = "allreduce";
  r.call.bytes = 2 << 20;
  r.in_call_s = in_call_s;
  r.done = done;
  return r;
}

TEST(HangWatchdogTest, RecordRoundTripsThroughOneLine) {
  auto r = rec(5, 123, 122, 7.5);
  r.call.op = "send";
  const auto back = parse_record(format_record(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rank, 5);
  EXPECT_EQ(back->host, "node2");
  EXPECT_EQ(back->local_rank, 1);
  EXPECT_EQ(back->call.entered, 123u);
  EXPECT_EQ(back->call.left, 122u);
  EXPECT_EQ(back->call.op, "send");
  EXPECT_EQ(back->call.bytes, 2u << 20);
  EXPECT_DOUBLE_EQ(back->in_call_s, 7.5);
  EXPECT_FALSE(back->done);
  EXPECT_TRUE(back->call.waiting.empty());
  EXPECT_EQ(back->call.peer, -1);
  r.call.waiting = "barrier";
  r.call.peer = 3;
  EXPECT_EQ(parse_record(format_record(r))->call.waiting, "barrier");
  EXPECT_EQ(parse_record(format_record(r))->call.peer, 3);
  EXPECT_FALSE(parse_record("5 node2 1 123"));  // a partial line
  EXPECT_FALSE(parse_record(""));
}

TEST(HangWatchdogTest, NamesTheRankThatNeverEnteredTheCall) {
  std::vector<RankCallRecord> ranks;
  for (int r = 0; r < 8; ++r) ranks.push_back(r == 5 ? rec(r, 122, 122, 0) : rec(r, 123, 122, 30));
  const auto lines = diagnose_hang(ranks, 10);
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "rank 5 (host node2, GPU 1) never entered allreduce #123 (2 MiB)");
  EXPECT_EQ(lines[1],
            "rank 0 (host node0, GPU 0) entered allreduce #123 (2 MiB) and never left (waited 30 s)");
}

// A frozen rank (SIGSTOP) stops publishing: its last state, here inside the very all-reduce the others wait
// in, is history. It is named first as frozen, and not taken for one more rank waiting in the call (the
// diagnosis used to name only the healthy ranks, stuck in the call).
TEST(HangWatchdogTest, AFrozenRankIsNamedFirstWhateverItsLastState) {
  std::vector<RankCallRecord> ranks{rec(0, 560, 559, 30), rec(1, 560, 559, 0.2)};
  ranks[1].age_s = 29.5;
  EXPECT_EQ(frozen_ranks(ranks), std::vector<int>{1});
  const auto lines = diagnose_hang(ranks, 10);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(
      lines[0],
      "rank 1 (host node0, GPU 1) stopped responding: its state is 29.5 s old (frozen: stopped, swapped out "
      "or stuck in the kernel); last seen in allreduce #560 (2 MiB)");
  EXPECT_EQ(lines[1],
            "rank 0 (host node0, GPU 0) entered allreduce #560 (2 MiB) and never left (waited 30 s)");
  // Frozen between calls, with nobody past the timeout yet: still named. A finished rank is never frozen.
  std::vector<RankCallRecord> quiet{rec(0, 7, 6, 2), rec(1, 6, 6, 0), rec(2, 6, 6, 0, true)};
  quiet[1].age_s = 8;
  quiet[2].age_s = 100;
  EXPECT_EQ(frozen_ranks(quiet), std::vector<int>{1});
  const auto q = diagnose_hang(quiet, 10);
  ASSERT_EQ(q.size(), 1u);
  EXPECT_NE(q[0].find("rank 1 (host node0, GPU 1) stopped responding: its state is 8 s old"),
            std::string::npos)
      << q[0];
  EXPECT_NE(q[0].find("last seen after call #6"), std::string::npos) << q[0];
}

TEST(HangWatchdogTest, ReadStatesCarryTheirAge) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("fb_ages_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  publish_call_state(dir, rec(0, 1, 1, 0), false);
  publish_call_state(dir, rec(1, 1, 1, 0), false);
  std::filesystem::last_write_time(dir / "rank-1.state",
                                   std::filesystem::file_time_type::clock::now() - std::chrono::seconds(20));
  const auto states = read_call_states(dir, 2);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_LT(states[0].age_s, kStaleStateS);
  EXPECT_GE(states[1].age_s, 19.0);
  EXPECT_EQ(frozen_ranks(states), std::vector<int>{1});
  std::filesystem::remove_all(dir);
}

TEST(HangWatchdogTest, NoStuckRankNoDiagnosis) {
  std::vector<RankCallRecord> ranks{rec(0, 4, 4, 0), rec(1, 5, 4, 3), rec(2, 4, 4, 0, true)};
  EXPECT_TRUE(diagnose_hang(ranks, 10).empty());  // rank 1 is in a call, but not for long
}

TEST(HangWatchdogTest, AFinishedRankIsSaidToHaveFinished) {
  std::vector<RankCallRecord> ranks{rec(0, 9, 8, 12), rec(1, 8, 8, 0, true)};
  const auto lines = diagnose_hang(ranks, 10);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "rank 1 (host node0, GPU 1) never entered allreduce #9 (2 MiB) (it had finished)");
}

// A point-to-point test: rank 0's send #3 waits for rank 2, which never entered its call #3, the recv; the
// ranks the test leaves out wait in a barrier of their own numbering, which is not rank 2's call.
TEST(HangWatchdogTest, ThePeerOfAStuckSendNeverEnteredTheRecv) {
  auto sender = rec(0, 3, 2, 30);
  sender.call.op = "send";
  sender.call.bytes = 1 << 20;
  std::vector<RankCallRecord> ranks{sender, rec(1, 1, 0, 30), rec(2, 2, 2, 0), rec(3, 1, 0, 30)};
  ranks[1].call.op = ranks[3].call.op = "barrier";
  ranks[1].call.bytes = ranks[3].call.bytes = 0;
  const auto lines = diagnose_hang(ranks, 10);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "rank 2 (host node1, GPU 0) never entered recv #3 (1 MiB)");
  EXPECT_EQ(lines[1], "rank 0 (host node0, GPU 0) entered send #3 (1 MiB) and never left (waited 30 s)");
  ranks[0].call.op = "recv";
  EXPECT_EQ(diagnose_hang(ranks, 10)[0], "rank 2 (host node1, GPU 0) never entered send #3 (1 MiB)");
}

// The send's peer is known: rank 0 sends to rank 2, which never entered its recv. The ranks the test leaves
// out wait in a barrier whose number is rank 2's next call (#1 here): their op is not rank 2's (it said
// "never entered barrier #1 (0 B)"). Nor does the peer's call number need to be rank 2's (mid-tournament:
// rank 0 at recv #10, rank 2 at its call #9).
TEST(HangWatchdogTest, AStuckPointToPointCallNamesItsPeer) {
  auto sender = rec(0, 1, 0, 30);
  sender.call.op = "send";
  sender.call.bytes = 16 << 10;
  sender.call.peer = 2;
  std::vector<RankCallRecord> ranks{sender, rec(1, 1, 0, 30), rec(2, 0, 0, 0), rec(3, 1, 0, 30)};
  ranks[1].call.op = ranks[3].call.op = "barrier";
  ranks[1].call.bytes = ranks[3].call.bytes = 0;
  EXPECT_EQ(diagnose_hang(ranks, 10)[0], "rank 2 (host node1, GPU 0) never entered recv #1 (16 KiB)");
  ranks[0].call = {10, 9, "recv", 4, 2, 0, ""};
  ranks[2].call.entered = ranks[2].call.left = 8;
  ranks[1].call = ranks[3].call = {9, 8, "barrier", 0, -1, 0, ""};
  EXPECT_EQ(diagnose_hang(ranks, 10)[0], "rank 2 (host node1, GPU 0) never entered send #9 (4 B)");
  // A send to another rank is no claim on rank 2: the call-number match decides, as before.
  ranks[0].call.peer = 1;
  EXPECT_EQ(diagnose_hang(ranks, 10)[0], "rank 2 (host node1, GPU 0) never entered barrier #9 (0 B)");
}

// Rank 0 entered the call last (or its state file is a period older): it waits in the call the stuck ranks
// wait in, so it is named as stuck, not left out of the diagnosis (a CI run once printed it without).
TEST(HangWatchdogTest, APeerInTheSameCallUnderTheTimeoutIsStuckToo) {
  std::vector<RankCallRecord> ranks{rec(0, 3, 2, 1.2), rec(1, 3, 2, 3.25), rec(2, 2, 2, 0),
                                    rec(3, 2, 1, 1.5)};
  const auto lines = diagnose_hang(ranks, 2);
  ASSERT_EQ(lines.size(), 3u);  // rank 3 waits in an earlier call, under the timeout: not part of this hang
  EXPECT_EQ(lines[0], "rank 2 (host node1, GPU 0) never entered allreduce #3 (2 MiB)");
  EXPECT_EQ(lines[1],
            "rank 0 (host node0, GPU 0) entered allreduce #3 (2 MiB) and never left (waited 1.2 s)");
  EXPECT_EQ(lines[2],
            "rank 1 (host node0, GPU 1) entered allreduce #3 (2 MiB) and never left (waited 3.25 s)");
}

// The audit's bisection: ranks 0 and 1 run one group, 2 and 3 another. Rank 1 never entered #7, so rank 0
// waits in it; ranks 2 and 3 finished their group's #7 and wait in the job-wide allgather that follows. They
// are not culprits (they were named "never entered #8").
TEST(HangWatchdogTest, RanksWaitingOutsideTheNumberedCallsAreNotNamed) {
  std::vector<RankCallRecord> ranks{rec(0, 7, 6, 30), rec(1, 6, 6, 0), rec(2, 7, 7, 0), rec(3, 7, 7, 0)};
  ranks[2].call.waiting = ranks[3].call.waiting = "allgather";
  const auto lines = diagnose_hang(ranks, 10);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "rank 1 (host node0, GPU 1) never entered allreduce #7 (2 MiB)");
  EXPECT_EQ(lines[1], "rank 0 (host node0, GPU 0) entered allreduce #7 (2 MiB) and never left (waited 30 s)");
  EXPECT_EQ(lines[2],
            "rank 2 (host node1, GPU 0) waits in a job-wide allgather after call #7 (for the ranks above)");
}

// Ranks that read the state files a period apart can each believe they are the lowest stuck rank; the
// claim lets one of them, and only one, report.
TEST(HangWatchdogTest, OneClaimOfTheReportSucceeds) {
  const auto dir = std::filesystem::temp_directory_path() / ("fb-hang-claim-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::atomic<int> won{0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) ranks.emplace_back([&] { won += claim_hang_report(dir) ? 1 : 0; });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(won.load(), 1);
  EXPECT_FALSE(claim_hang_report(dir));
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(claim_hang_report(dir));  // no directory: nobody claims (and nothing is created)
}

}  // namespace
}  // namespace fb
