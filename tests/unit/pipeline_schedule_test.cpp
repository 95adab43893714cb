// The 1F1B schedule (workloads/pipeline_schedule.hpp): compute order, counts, in-flight bound, and that the
// transfers of neighbouring stages match one to one and cannot deadlock when each blocks until its peer
// takes part (rendezvous, the strictest reading of MPI and NCCL point-to-point).
#include "workloads/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/error.hpp"

namespace fb::workloads {
namespace {

using K = PipeOpKind;

std::int64_t count(const std::vector<PipeOp>& ops, K kind) {
  std::int64_t n = 0;
  for (const auto& op : ops) n += op.kind == kind ? 1 : 0;
  return n;
}

TEST(PipelineSchedule, FourStagesEightMicroBatches) {
  const std::int64_t P = 4, M = 8;
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(P, 0, M)),
            "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");  // 3 warm-up forwards, then 1F1B
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(P, 1, M)),
            "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(P, 3, M)),
            "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  for (std::int64_t s = 0; s < P; ++s) {
    const auto ops = one_f_one_b_schedule(P, s, M);
    EXPECT_EQ(warmup_forwards(P, s, M), P - s - 1);
    EXPECT_EQ(count(ops, K::forward), M) << "stage " << s;
    EXPECT_EQ(count(ops, K::backward), M) << "stage " << s;
    // The first stage receives no activations and sends no gradients; the last sends no activations.
    EXPECT_EQ(count(ops, K::recv_forward) + count(ops, K::send_backward_recv_forward), s == 0 ? 0 : M);
    EXPECT_EQ(count(ops, K::send_forward) + count(ops, K::send_forward_recv_backward), s == P - 1 ? 0 : M);
  }
}

TEST(PipelineSchedule, BackwardFollowsItsForwardAndInFlightIsBounded) {
  for (std::int64_t P : {1, 2, 3, 4, 8})
    for (std::int64_t M : {1, 2, 3, 4, 5, 8, 13})
      for (std::int64_t s = 0; s < P; ++s) {
        const auto ops = one_f_one_b_schedule(P, s, M);
        std::set<std::int64_t> done_forward, in_flight;
        std::int64_t next_f = 0, next_b = 0, peak = 0;
        for (const auto& op : ops) {
          if (op.kind == K::forward) {
            EXPECT_EQ(op.micro_batch, next_f++) << "forwards in order";
            done_forward.insert(op.micro_batch);
            in_flight.insert(op.micro_batch);
            peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(in_flight.size()));
          } else if (op.kind == K::backward) {
            EXPECT_TRUE(done_forward.count(op.micro_batch)) << "B" << op.micro_batch << " before its F";
            EXPECT_EQ(op.micro_batch, next_b++) << "backwards in order";
            in_flight.erase(op.micro_batch);
          }
        }
        EXPECT_EQ(next_f, M);
        EXPECT_EQ(next_b, M);
        EXPECT_EQ(peak, micro_batches_in_flight(P, s, M)) << "P " << P << " M " << M << " stage " << s;
      }
}

TEST(PipelineSchedule, FewerMicroBatchesThanStagesStillRuns) {
  // M < P: no steady phase on the early stages, a large bubble, but every micro-batch goes both ways.
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(4, 0, 2)), "F0 F1 B0 B1");
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(4, 2, 2)), "F0 F1 B0 B1");  // one warm-up forward
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(4, 3, 2)), "F0 B0 F1 B1");
  EXPECT_EQ(schedule_string(one_f_one_b_schedule(1, 0, 3)), "F0 B0 F1 B1 F2 B2");  // no pipeline
}

TEST(PipelineSchedule, BadArgumentsAreUsageErrors) {
  EXPECT_THROW(one_f_one_b_schedule(0, 0, 1), Error);
  EXPECT_THROW(one_f_one_b_schedule(2, 2, 1), Error);
  EXPECT_THROW(one_f_one_b_schedule(2, 0, 0), Error);
}

// A transfer as both sides of boundary b (stages b and b+1) see it: kind 'F' (activations), 'B' (gradients)
// or 'X' (both at once), with the micro-batches of each direction.
using Link = std::tuple<std::int64_t, char, std::int64_t, std::int64_t>;  // boundary, kind, fwd mb, bwd mb

std::optional<Link> link_of(std::int64_t stage, const PipeOp& op) {
  switch (op.kind) {
    case K::send_forward:
      return Link{stage, 'F', op.micro_batch, -1};
    case K::recv_forward:
      return Link{stage - 1, 'F', op.micro_batch, -1};
    case K::send_forward_recv_backward:
      return Link{stage, 'X', op.micro_batch, op.other_micro_batch};
    case K::send_backward_recv_forward:
      return Link{stage - 1, 'X', op.other_micro_batch, op.micro_batch};
    case K::recv_backward:
      return Link{stage, 'B', -1, op.micro_batch};
    case K::send_backward:
      return Link{stage - 1, 'B', -1, op.micro_batch};
    default:
      return std::nullopt;
  }
}

TEST(PipelineSchedule, TransfersMatchAndBlockingExecutionNeverDeadlocks) {
  for (std::int64_t P : {2, 3, 4, 6})
    for (std::int64_t M : {1, 2, 3, 4, 7, 8}) {
      std::vector<std::vector<PipeOp>> ops;
      for (std::int64_t s = 0; s < P; ++s) ops.push_back(one_f_one_b_schedule(P, s, M));
      std::vector<std::size_t> at(static_cast<std::size_t>(P), 0);
      // Each stage runs compute freely and blocks in a transfer until the neighbour is at the same transfer.
      for (bool progress = true; progress;) {
        progress = false;
        for (std::int64_t s = 0; s < P; ++s) {
          auto& i = at[s];
          while (i < ops[s].size() && !link_of(s, ops[s][i])) {
            ++i;
            progress = true;
          }
          if (i == ops[s].size()) continue;
          const Link mine = *link_of(s, ops[s][i]);
          const std::int64_t peer = std::get<0>(mine) == s ? s + 1 : s - 1;
          ASSERT_TRUE(peer >= 0 && peer < P);
          const auto& j = at[peer];
          if (j < ops[peer].size() && link_of(peer, ops[peer][j]) == mine) {
            ++at[s];
            ++at[peer];
            progress = true;
          }
        }
      }
      for (std::int64_t s = 0; s < P; ++s)
        ASSERT_EQ(at[s], ops[s].size()) << "deadlock: P " << P << " M " << M << " stage " << s << " stuck";
    }
}

}  // namespace
}  // namespace fb::workloads
