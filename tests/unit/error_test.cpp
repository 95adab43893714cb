// Errors are one line (core/error.hpp): a message quoting a path, an option value or a JSON key with a
// control character in it keeps to one line and shows the character, and what() holds all of it.
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace fb {
namespace {

TEST(OneLine, ControlCharactersAreWrittenAsEscapes) {
  EXPECT_EQ(one_line("file not found: /tmp/no\nsuch.json"), "file not found: /tmp/no\\nsuch.json");
  EXPECT_EQ(one_line("unknown model 'tiny-dense\r'"), "unknown model 'tiny-dense\\r'");
  EXPECT_EQ(one_line(std::string("a\0b\tc\x1b[31m\x7f", 11)), "a\\0b\\tc\\x1b[31m\\x7f");
  // Printable text, backslashes and UTF-8 are left as they are.
  EXPECT_EQ(one_line("C:\\x 5 µs — ok"), "C:\\x 5 µs — ok");
  EXPECT_EQ(one_line(""), "");
}

TEST(OneLine, AnErrorKeepsItsWholeMessageOnOneLine) {
  const Error e = usage_error(std::string("invalid --m '8\0 junk': not a size\nsecond", 40));
  EXPECT_EQ(std::string(e.what()), "invalid --m '8\\0 junk': not a size\\nsecond");
  EXPECT_EQ(e.kind(), ErrorKind::usage);
}

}  // namespace
}  // namespace fb
