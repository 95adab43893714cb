// The typed extra of a "burnin" Result (reports/burnin_extra.cpp): round trip and a missing key.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "reports/burnin_extra.hpp"
#include "reports/report_json.hpp"

namespace fb::reports {
namespace {

TEST(BurninExtra, RoundTripsAndNamesAMissingKey) {
  const BurninExtra x{{{0, 0, "cpu", 10, 0.25, {"0000000000000007", "0000000000000007"}},
                       {1, 1, "cpu", 12, 0.5, {"0000000000000007", "0000000000000009"}}},
                      {{1, 1, 2.0, "checksum 9 at check 1 differs from its own first result 7"}},
                      "fail"};
  Result r;
  r.benchmark = "burnin";
  r.name = "burnin/node/h0";
  write_burnin_extra(r, x);
  EXPECT_EQ(r.extra["ranks"][1]["checksums"][1], "0000000000000009");
  EXPECT_EQ(r.extra["verdict"], "fail");
  Report report;
  report.results = {r};
  const Result back = report_from_json(nlohmann::json::parse(to_json(report).dump()), "test").results.at(0);
  EXPECT_EQ(read_burnin_extra(back), x);
  r.extra["problems"][0].erase("first_seen_s");
  try {
    read_burnin_extra(r);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "result burnin/burnin/node/h0: $.extra.problems[0]: missing required field \"first_seen_s\"");
  }
}

}  // namespace
}  // namespace fb::reports
