// Known answers for the collective table: nccl-tests' bus-bandwidth factors (doc/PERFORMANCE.md), its size
// rounding (getCollByteCount), the sweep, the MoE traffic matrix and the --check patterns.
#include "workloads/collective_bandwidth.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "workloads/collective_check.hpp"
#include "workloads/moe_dispatch_traffic.hpp"

namespace fb::workloads {
namespace {

TEST(BusFactor, EveryCollectiveForOneToNineRanks) {
  for (int n = 1; n <= 9; ++n) {
    const double ring = static_cast<double>(n - 1) / n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::allreduce, n), 2.0 * ring) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::allgather, n), ring) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::reducescatter, n), ring) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::alltoall, n), ring) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::alltoallv, n), ring) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::broadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::reduce, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::sendrecv, n), 1.0) << n;
  }
  // Spot values written out: 8 ranks allreduce 1.75, 3 ranks allgather 2/3, 1 rank allreduce 0.
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::allreduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::allgather, 3), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveOp::allreduce, 1), 0.0);
}

TEST(CollectiveTable, NamesRoundTripAndAliases) {
  std::set<std::string_view> names;
  for (const auto& info : all_collectives()) {
    EXPECT_EQ(parse_collective(info.name), info.op);
    names.insert(info.name);
  }
  EXPECT_EQ(names.size(), 8u);
  EXPECT_EQ(parse_collective("all_reduce"), CollectiveOp::allreduce);
  EXPECT_EQ(parse_collective("reduce_scatter"), CollectiveOp::reducescatter);
  EXPECT_THROW(parse_collective("allscatter"), Error);
}

TEST(SizeRounding, WholeElementsForVectorCollectives) {
  // allreduce: count = S / elem, rounded down to whole elements; S is then count·elem.
  auto c = collective_counts(CollectiveOp::allreduce, 1048576, DType::fp32, 4);
  EXPECT_EQ(c.count, 262144u);
  EXPECT_EQ(c.bytes, 1048576u);
  c = collective_counts(CollectiveOp::broadcast, 10, DType::fp32, 3);
  EXPECT_EQ(c.count, 2u);
  EXPECT_EQ(c.bytes, 8u);
  c = collective_counts(CollectiveOp::sendrecv, 7, DType::fp64, 2);
  EXPECT_EQ(c.count, 0u);
  EXPECT_EQ(c.bytes, 0u);
}

TEST(SizeRounding, PerRankChunksAreWholeSixteenByteAligned) {
  // nccl-tests: base = (count / nranks) & -(16 / eltSize).
  EXPECT_EQ(aligned_per_rank_count(1048576, 4, 3), 87380u);   // 262144/3 = 87381 → multiple of 4
  EXPECT_EQ(aligned_per_rank_count(1048576, 2, 3), 174760u);  // 524288/3 = 174762 → multiple of 8
  EXPECT_EQ(aligned_per_rank_count(1000, 1, 3), 320u);        // 333 → multiple of 16
  EXPECT_EQ(aligned_per_rank_count(64, 4, 4), 4u);
  EXPECT_EQ(aligned_per_rank_count(32, 4, 4), 0u);  // 2 elements per rank < one 16-byte chunk
  EXPECT_EQ(aligned_per_rank_count(48, 8, 3), 2u);  // fp64: 16/8 = 2-element chunks

  auto ag = collective_counts(CollectiveOp::allgather, 1048576, DType::fp32, 3);
  EXPECT_EQ(ag.count, 87380u);
  EXPECT_EQ(ag.send_count, 87380u);
  EXPECT_EQ(ag.recv_count, 3u * 87380u);
  EXPECT_EQ(ag.bytes, 3u * 87380u * 4u);  // the whole gathered array
  auto rs = collective_counts(CollectiveOp::reducescatter, 1048576, DType::bf16, 3);
  EXPECT_EQ(rs.count, 174760u);
  EXPECT_EQ(rs.send_count, 3u * 174760u);
  EXPECT_EQ(rs.recv_count, 174760u);
  auto a2a = collective_counts(CollectiveOp::alltoall, 1048576, DType::fp32, 8);
  EXPECT_EQ(a2a.count, 32768u);  // per peer
  EXPECT_EQ(a2a.send_count, 262144u);
  EXPECT_EQ(a2a.bytes, 1048576u);
  for (int n = 1; n <= 9; ++n)
    for (std::uint64_t s : {8ull, 100ull, 4096ull, 1000003ull}) {
      const auto x = collective_counts(CollectiveOp::allgather, s, DType::fp16, n);
      EXPECT_EQ(x.count % 8, 0u);
      EXPECT_LE(x.bytes, s);
    }
}

TEST(Bandwidth, AlgbwIsBytesPerSecondInGB) {
  EXPECT_DOUBLE_EQ(algbw_gbps(1000000000, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(algbw_gbps(1048576, 1e-3), 1.048576);
  EXPECT_DOUBLE_EQ(algbw_gbps(100, 0.0), 0.0);
}

TEST(Sweep, FactorStepAndErrors) {
  EXPECT_EQ(sweep_sizes(8, 64, 2, 0), (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(sweep_sizes(8, 100, 4, 0), (std::vector<std::uint64_t>{8, 32}));
  EXPECT_EQ(sweep_sizes(10, 40, 0, 15), (std::vector<std::uint64_t>{10, 25, 40}));
  EXPECT_EQ(sweep_sizes(64, 64, 2, 0), (std::vector<std::uint64_t>{64}));
  EXPECT_THROW(sweep_sizes(128, 64, 2, 0), Error);
  EXPECT_THROW(sweep_sizes(8, 64, 1, 0), Error);
  EXPECT_THROW(sweep_sizes(0, 64, 2, 0), Error);
  EXPECT_NO_THROW(sweep_sizes(8, 64, 1, 8));  // -i makes -f irrelevant
}

TEST(MoeTraffic, DeterministicDeduplicatedAndBounded) {
  MoeRouting r{.tokens = 512, .hidden = 16, .experts = 16, .top_k = 4, .skew = 0.0, .seed = 7};
  const auto a = moe_dispatch_tokens(r, 4);
  const auto b = moe_dispatch_tokens(r, 4);
  EXPECT_EQ(a.elements, b.elements);
  EXPECT_EQ(a.checksum(), b.checksum());
  for (int src = 0; src < 4; ++src) {
    // Every token goes to at least one and at most min(top_k, ranks) ranks, once per rank.
    EXPECT_GE(a.sent(src), r.tokens);
    EXPECT_LE(a.sent(src), r.tokens * 4);
    for (int dst = 0; dst < 4; ++dst) EXPECT_LE(a.at(src, dst), r.tokens);
  }
  r.seed = 8;
  EXPECT_NE(moe_dispatch_tokens(r, 4).elements, a.elements);
  // One expert per token on one of 4 ranks: each token is counted exactly once.
  MoeRouting one{.tokens = 100, .hidden = 1, .experts = 8, .top_k = 1, .skew = 0.0, .seed = 1};
  const auto m = moe_dispatch_tokens(one, 4);
  for (int src = 0; src < 4; ++src) EXPECT_EQ(m.sent(src), 100u);
  // top_k = experts: every token reaches every rank exactly once (dedup), so the matrix is all T.
  MoeRouting all{.tokens = 10, .hidden = 1, .experts = 8, .top_k = 8, .skew = 1.0, .seed = 1};
  const auto f = moe_dispatch_tokens(all, 4);
  for (auto e : f.elements) EXPECT_EQ(e, 10u);
  EXPECT_DOUBLE_EQ(f.busiest_share(), 0.25);
}

TEST(MoeTraffic, SkewConcentratesTraffic) {
  MoeRouting r{.tokens = 2000, .hidden = 1, .experts = 32, .top_k = 2, .skew = 0.0, .seed = 3};
  const double uniform = moe_dispatch_tokens(r, 8).busiest_share();
  r.skew = 1.5;
  const double skewed = moe_dispatch_tokens(r, 8).busiest_share();
  EXPECT_GT(skewed, uniform);
  EXPECT_LT(uniform, 0.2);  // near 1/8 when balanced
}

TEST(MoeTraffic, ValidationNamesTheOption) {
  MoeRouting r{.tokens = 8, .hidden = 8, .experts = 6, .top_k = 2, .skew = 0.0, .seed = 1};
  try {
    validate_moe_routing(r, 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--experts"), std::string::npos);
  }
  r.experts = 8;
  r.top_k = 9;
  EXPECT_THROW(validate_moe_routing(r, 4), Error);
}

TEST(UnevenAlltoallv, SymmetricUnevenAndWithinSize) {
  const auto m = uneven_alltoallv(4096, 4, 3);  // 6 units per rank, unit = 170 → 168 (16-byte aligned)
  EXPECT_EQ(m.at(0, 0), 168u);
  EXPECT_EQ(m.at(0, 1), 2u * 168u);
  EXPECT_EQ(m.at(1, 2), 168u);  // (1+2)%3 = 0 → 1 unit
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(m.sent(i), 6u * 168u);
    EXPECT_LE(m.sent(i) * 4, 4096u);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(m.at(i, j), m.at(j, i));
  }
  EXPECT_EQ(displacements({3, 0, 5}), (std::vector<std::size_t>{0, 3, 3}));
}

TEST(CheckPattern, SumsAreExactInEveryOrder) {
  for (DType t : {DType::fp32, DType::bf16, DType::fp16, DType::fp8_e4m3, DType::int32, DType::int8})
    for (int n : {1, 2, 3, 4, 8, 9, 64})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
        const CheckPattern p(t, op, n);
        for (std::size_t i = 0; i < 50; ++i) {
          double partial = 0;
          double lo = p.reduce_input(0, i), hi = lo;
          for (int r = 0; r < n; ++r) {
            const double v = p.reduce_input(r, i);
            partial += v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
            if (op == ReduceOp::sum) {
              EXPECT_LE(partial, exact_integer_limit(t)) << to_string(t) << " n=" << n;
            }
          }
          const double e = p.reduce_expected(i);
          if (op == ReduceOp::sum) {
            EXPECT_DOUBLE_EQ(e, partial);
          }
          // Extremes of representable values are exact in every type.
          if (op == ReduceOp::max) {
            EXPECT_EQ(e, hi) << to_string(t) << " n=" << n << " i=" << i;
          }
          if (op == ReduceOp::min) {
            EXPECT_EQ(e, lo) << to_string(t) << " n=" << n << " i=" << i;
          }
          if (op == ReduceOp::avg && n <= 8 && t != DType::fp8_e4m3) {
            EXPECT_DOUBLE_EQ(e, partial / n);
          }
        }
      }
  const CheckPattern p(DType::fp32, ReduceOp::sum, 4);
  EXPECT_FALSE(p.matches(CheckPattern::kSentinel, p.reduce_expected(0)));
  EXPECT_NE(p.move_value(0, 1, 0), p.move_value(1, 0, 0));
}

}  // namespace
}  // namespace fb::workloads
