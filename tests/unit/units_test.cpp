#include "core/units.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace fb {
namespace {

TEST(ParseSize, AcceptsBinarySuffixesAsNcclTestsDoes) {
  EXPECT_EQ(parse_size("8"), 8u);
  EXPECT_EQ(parse_size("64K"), 65536u);
  EXPECT_EQ(parse_size("1M"), 1048576u);
  EXPECT_EQ(parse_size("8G"), 8ull << 30);
  EXPECT_EQ(parse_size("1Gi"), 1ull << 30);
  EXPECT_EQ(parse_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_size("2t"), 2ull << 40);
  EXPECT_EQ(parse_size("1.5K"), 1536u);
  // Scientific notation, as the simulator's options take it (it used to read "1e3M" as the unit "e3m").
  EXPECT_EQ(parse_size("1e3M"), 1000ull << 20);
  EXPECT_EQ(parse_size("2.5e1"), 25u);
  EXPECT_EQ(parse_size("4E+2K"), 400ull << 10);
}

TEST(ParseSize, RejectsBadInputNamingTheOption) {
  for (const char* bad : {"", "-5", "abc", "12X", "0.3", "1e99G"}) {
    try {
      parse_size(bad, "-b");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("-b"), std::string::npos) << e.what();
    }
  }
}

// Sizes are also counts (--m, --sweep-gpus): a fraction is "not a whole number", with no bytes in it.
TEST(ParseSize, AFractionIsNotAWholeNumber) {
  try {
    parse_size("64.7", "--m");
    ADD_FAILURE() << "accepted 64.7";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "invalid --m '64.7': not a whole number");
  }
}

TEST(ParseDuration, AcceptsCommonUnits) {
  EXPECT_DOUBLE_EQ(parse_duration("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("90"), 90);
  // A century is the ceiling: beyond it, burnin --duration 1000000h overflowed its check count and passed
  // at once.
  EXPECT_DOUBLE_EQ(parse_duration("36500d"), 36500 * 86400.0);
  EXPECT_THROW(parse_duration("1000000h"), Error);
  EXPECT_DOUBLE_EQ(parse_duration("15m"), 900);
  EXPECT_DOUBLE_EQ(parse_duration("2h"), 7200);
  EXPECT_DOUBLE_EQ(parse_duration("1d"), 86400);
  EXPECT_DOUBLE_EQ(parse_duration("250us"), 250e-6);
  EXPECT_DOUBLE_EQ(parse_duration("1e-3s"), 1e-3);
  EXPECT_DOUBLE_EQ(parse_duration("1.5e2m"), 9000);
  EXPECT_DOUBLE_EQ(parse_duration("1e4d"), 1e4 * 86400);
}

TEST(ParseDuration, RejectsBadInput) {
  for (const char* bad : {"", "-1s", "fast", "10 parsecs", "5y", "5e", "5es", "1e30s", "1e5d"}) {
    EXPECT_THROW(parse_duration(bad, "--hang-timeout"), Error) << bad;
  }
}

TEST(FormatBytes, UsesBinaryUnits) {
  EXPECT_EQ(format_bytes(8), "8 B");
  EXPECT_EQ(format_bytes(65536), "64 KiB");
  EXPECT_EQ(format_bytes(3ull << 29), "1.5 GiB");
  EXPECT_EQ(format_bytes(1020ull << 30), "1020 GiB");  // not "1.02e+03 GiB"
  EXPECT_EQ(format_bytes((1ull << 40) - 1), "1024 GiB");
  EXPECT_EQ(format_bytes(3ull << 61), "6 EiB");
}

}  // namespace
}  // namespace fb
