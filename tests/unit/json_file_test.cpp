// JSON inputs (core/json_file.hpp): an object that names a key twice is refused with the key's path, since
// the parser would silently keep the last value (a rules file with "tolerance" twice loosened a CI gate).
#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"
#include "core/json_file.hpp"

namespace fb {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_json_text(text, "in.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(JsonFile, DuplicateKeysAreRefusedWithTheirPath) {
  EXPECT_EQ(error_of(R"({"tolerance": "5%", "rules": [], "tolerance": "500%"})"),
            "in.json: $.tolerance: duplicate key");
  EXPECT_EQ(error_of(R"({"results": [{"a": 1}, {"metrics": {"x": {"value": 1, "value": 2}}}]})"),
            "in.json: $.results[1].metrics.x.value: duplicate key");
  EXPECT_EQ(error_of(R"([[1, 2], {"k": [3, {"z": 0, "z": 1}]}])"), "in.json: $[1].k[1].z: duplicate key");
}

TEST(JsonFile, TheSameKeyInDifferentObjectsIsFine) {
  const auto j = parse_json_text(R"({"a": {"v": 1}, "b": {"v": 2}, "c": [{"v": 3}, {"v": 4}]})", "in.json");
  EXPECT_EQ(j["c"][1]["v"], 4);
}

// The byte of the error (1-based); a text that stops inside a value is called truncated, not pointed one past
// its end, and one with no value at all empty.
TEST(JsonFile, MalformedJsonNamesTheByteOrTheTruncation) {
  EXPECT_EQ(error_of(R"({"a": 1,] )"), "in.json: malformed JSON at byte 9");
  EXPECT_EQ(error_of(R"({"a": 1,)"),
            "in.json: malformed JSON: it ends inside a value, after 8 bytes (truncated?)");
  EXPECT_EQ(error_of(" \n"), "in.json: empty: no JSON value in it");
  EXPECT_EQ(error_of("\xEF\xBB\xBF\n"), "in.json: empty: no JSON value in it");
  // A number beyond double is named by its first digits, not quoted whole (400 digits in one error line).
  EXPECT_EQ(error_of(R"({"a": 1e5000})"),
            "in.json: malformed JSON: the number 1e5000 is beyond the range of a double");
  EXPECT_EQ(
      error_of("{\"a\": " + std::string(400, '9') + "}"),
      "in.json: malformed JSON: the number 99999999999999999999... (400 characters) is beyond the range of a "
      "double");
}

// nlohmann's lexer stops at a NUL as at the end of its input: what follows one (a damaged tail, another
// file appended) would be dropped unseen.
TEST(JsonFile, ANulByteIsMalformedNotTheEnd) {
  EXPECT_EQ(error_of(std::string("{\"a\": 1}\0 garbage {{{", 20)),
            "in.json: malformed JSON: a NUL byte at byte 9");
  EXPECT_EQ(error_of(std::string("\0", 1)), "in.json: malformed JSON: a NUL byte at byte 1");
  EXPECT_EQ(parse_json_text("{\"a\": \"\\u0000\"}", "in.json")["a"], std::string("\0", 1));  // escaped: fine
}

// Nesting beyond 512 levels is refused as input (150,000 nested arrays overflowed the stack when the value
// was copied: exit 139); 512 levels still parse.
TEST(JsonFile, NestingBeyondTheLimitIsRefused) {
  const auto nested = [](std::size_t depth) {
    return "{\"summary\": " + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_NO_THROW((void)parse_json_text(nested(512), "in.json"));
  EXPECT_EQ(error_of(nested(513)), "in.json: JSON nested deeper than 512 levels");
  EXPECT_EQ(error_of(nested(200000)), "in.json: JSON nested deeper than 512 levels");
  EXPECT_THROW(reject_duplicate_keys(nested(600), "in.json"), Error);
}

}  // namespace
}  // namespace fb
