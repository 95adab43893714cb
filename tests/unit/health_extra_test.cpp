// The typed extra of a "health" Result (reports/health_extra.cpp): verdict and reason round-trip; a report
// without them reads as neither (the caller falls back on status and error); a verdict that is not a string
// is an input error.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "reports/health_extra.hpp"

namespace fb::reports {
namespace {

TEST(HealthExtra, RoundTripsAndToleratesAbsence) {
  Result r;
  write_health_extra(r, {"warn", "1.2 GB/s below the floor"});
  EXPECT_EQ(r.extra, nlohmann::json({{"verdict", "warn"}, {"reason", "1.2 GB/s below the floor"}}));
  EXPECT_EQ(read_health_extra(r), (HealthExtra{"warn", "1.2 GB/s below the floor"}));
  EXPECT_EQ(read_health_extra(Result{}), HealthExtra{});
  Result only;
  write_health_extra(only, {std::nullopt, "why"});
  EXPECT_EQ(only.extra, nlohmann::json({{"reason", "why"}}));
  r.extra["verdict"] = 3;
  EXPECT_THROW(read_health_extra(r), Error);
}

}  // namespace
}  // namespace fb::reports
