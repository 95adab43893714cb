// The suite step tag (reports/suite_step_extra.cpp): written, read back, absent or not a string.
#include <gtest/gtest.h>

#include "reports/suite_step_extra.hpp"

namespace fb::reports {
namespace {

TEST(SuiteStepExtra, RoundTripsAndToleratesAbsence) {
  Result r;
  EXPECT_FALSE(find_suite_step(r));
  write_suite_step(r, "train-dense");
  EXPECT_EQ(r.extra, nlohmann::json({{"suite_step", "train-dense"}}));
  EXPECT_EQ(find_suite_step(r), "train-dense");
  r.extra["suite_step"] = 4;
  EXPECT_FALSE(find_suite_step(r));
}

}  // namespace
}  // namespace fb::reports
