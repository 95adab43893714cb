// The typed extras of the "locate" Results (reports/locate_extra.cpp): p2p matrix and verdict, bisection
// rounds, transport record and hang diagnosis round-trip through the report's JSON; non-finite figures are
// null; the heatmap's reader tolerates what it cannot draw.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "reports/locate_extra.hpp"
#include "reports/report_json.hpp"
#include "tests/unit/report_round_trip.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

using testing::through_json;

P2pExtra p2p() {
  const LocateEndpoint a{0, "h0", 0}, b{1, "h1", 0};
  P2pExtra x;
  x.matrix = {
      {"h0 (rank 0, GPU 0)", "h1 (rank 1, GPU 0)"}, 1 << 20, {{NAN, 10}, {1, NAN}}, {{NAN, 5}, {6, NAN}}};
  x.endpoints = {a, b};
  x.verdict = P2pVerdictExtra{5.5, 10, {}, {{a, b}}, {{b, a, 1, "90% below the reference"}}};
  return x;
}

// NaN != NaN: compares the matrices' shape and finite cells, then the rest.
void expect_same(const P2pExtra& got, const P2pExtra& want) {
  ASSERT_EQ(got.matrix.bw_gbps.size(), want.matrix.bw_gbps.size());
  for (std::size_t i = 0; i < want.matrix.bw_gbps.size(); ++i)
    for (std::size_t j = 0; j < want.matrix.bw_gbps.size(); ++j) {
      const double g = got.matrix.bw_gbps[i][j], w = want.matrix.bw_gbps[i][j];
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << i << "," << j;
      const double gl = got.matrix.latency_us[i][j], wl = want.matrix.latency_us[i][j];
      EXPECT_TRUE(std::isnan(wl) ? std::isnan(gl) : gl == wl) << i << "," << j;
    }
  EXPECT_EQ(got.matrix.labels, want.matrix.labels);
  EXPECT_EQ(got.matrix.bytes, want.matrix.bytes);
  EXPECT_EQ(got.endpoints, want.endpoints);
  EXPECT_EQ(got.verdict, want.verdict);
}

TEST(LocateExtra, P2pRoundTripsWithNullDiagonal) {
  Result r;
  r.benchmark = "locate";
  r.name = "p2p/node/1048576";
  write_p2p_extra(r, p2p());
  EXPECT_TRUE(r.extra["matrix"]["bw_gbps"][0][0].is_null());
  EXPECT_EQ(r.extra["endpoints"][1], json({{"rank", 1}, {"host", "h1"}, {"local_rank", 0}}));
  EXPECT_EQ(r.extra["verdict"], p2p_verdict_json(*p2p().verdict));
  EXPECT_EQ(r.extra["verdict"]["slow_links"][0]["b"]["host"], "h1");
  EXPECT_TRUE(has_p2p_verdict(r));
  expect_same(read_p2p_extra(r), p2p());
  expect_same(read_p2p_extra(through_json(r)), p2p());
  const auto h = find_p2p_matrix(r);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->labels, p2p().matrix.labels);
  EXPECT_EQ(h->bw_gbps[1][0], 1);

  auto smaller = p2p();
  smaller.verdict.reset();
  Result s;
  write_p2p_extra(s, smaller);
  EXPECT_FALSE(has_p2p_verdict(s));
  expect_same(read_p2p_extra(s), smaller);
}

TEST(LocateExtra, BisectionTransportAndHangRoundTrip) {
  BisectionExtra b;
  b.rounds.push_back({{{"h0", "h1"}, 4, 3.5, false}});
  b.rounds.push_back({{{"h0"}, 2, 7.25, true}, {{"h1"}, 1, NAN, false}});
  b.slow_nodes = {"h0"};
  Result r;
  write_bisection_extra(r, b);
  EXPECT_TRUE(r.extra["rounds"][1][1]["busbw_gbps"].is_null());
  const auto back = read_bisection_extra(through_json(r));
  EXPECT_TRUE(std::isnan(back.rounds[1][1].busbw_gbps));
  EXPECT_EQ(back.rounds[1][0], b.rounds[1][0]);
  EXPECT_EQ(back.rounds[0], b.rounds[0]);
  EXPECT_EQ(back.slow_nodes, b.slow_nodes);
  EXPECT_FALSE(r.extra.contains("cross_pairs"));  // written only when a cross-check ran
  EXPECT_TRUE(back.cross_pairs.empty());
  b.cross_pairs = {{{"h1", "h3"}, 2, 0.25, true}, {{"h2", "h4"}, 2, 6.5, false}};
  Result c;
  write_bisection_extra(c, b);
  EXPECT_EQ(read_bisection_extra(through_json(c)).cross_pairs, b.cross_pairs);

  const TransportExtra t{{{"engine", "mpi"}, {"kinds", {"shm"}}}, "MPI 5; transports shm"};
  Result tr;
  write_transport_extra(tr, t);
  EXPECT_EQ(read_transport_extra(through_json(tr)), t);
  EXPECT_EQ(read_transport_extra(Result{}), TransportExtra{});  // both may be absent

  Result hang;
  write_hang_extra(hang, {{"rank 1 never entered allreduce #3"}});
  EXPECT_EQ(read_hang_extra(through_json(hang)).diagnosis,
            std::vector<std::string>{"rank 1 never entered allreduce #3"});
}

TEST(LocateExtra, MissingKeysAreNamedTheHeatmapTolerates) {
  Result r;
  r.benchmark = "locate";
  r.name = "p2p/node/1048576";
  write_p2p_extra(r, p2p());
  r.extra["matrix"].erase("bytes");
  try {
    read_p2p_extra(r);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "result locate/p2p/node/1048576: $.extra.matrix: missing required field \"bytes\"");
  }
  EXPECT_TRUE(find_p2p_matrix(r));  // the heatmap needs labels and bw_gbps only
  r.extra["matrix"] = {{"labels", {"a", 7}}, {"bw_gbps", json::array({json::array({"x", 2})})}};
  const auto h = find_p2p_matrix(r);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->labels, (std::vector<std::string>{"a", "7"}));
  EXPECT_TRUE(std::isnan(h->bw_gbps[0][0]));
  EXPECT_EQ(h->bw_gbps[0][1], 2);
  r.extra["matrix"].erase("labels");
  EXPECT_FALSE(find_p2p_matrix(r));
  Result hang;
  hang.benchmark = "locate";
  hang.name = "hang";
  EXPECT_THROW(read_hang_extra(hang), Error);
}

}  // namespace
}  // namespace fb::reports
