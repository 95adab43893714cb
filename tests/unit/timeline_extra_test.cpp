// An explicit timeline (reports/timeline_extra.cpp): spans round-trip through a result's extra; lists that
// are empty or hold a span without numeric bounds are no timeline; a span without a category is "other".
#include <gtest/gtest.h>

#include "reports/timeline_extra.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

TEST(TimelineExtra, RoundTripsAndRefusesWhatIsNotATimeline) {
  Result r;
  EXPECT_FALSE(find_timeline_extra(r));
  write_timeline_extra(r, {{0, 5, "productive"}, {5, 6, "detection"}});
  const auto spans = find_timeline_extra(r);
  ASSERT_TRUE(spans);
  ASSERT_EQ(spans->size(), 2u);
  EXPECT_EQ((*spans)[1].category, "detection");
  EXPECT_EQ((*spans)[1].end_s, 6);
  EXPECT_FALSE(parse_timeline_spans(json::array()));
  EXPECT_FALSE(parse_timeline_spans(json{{{"start_s", 0}}}));
  const auto other = parse_timeline_spans(json{{{"start_s", 0}, {"end_s", 1}}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->at(0).category, "other");
}

}  // namespace
}  // namespace fb::reports
