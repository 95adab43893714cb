// The published figures in configs/references pair with our results by name (compare matches benchmark +
// name, or a train reference's params.match pattern). A dtype spelt other than the way our results spell it
// ("fp8" for fp8_e4m3) never pairs: the reference row stays MISSING and ours NEW, silently. (A train
// reference's params.dtype is the source's own label, e.g. mxfp8; its match pattern is what pairs.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace fb {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

// The name our results carry for `text` (parse_dtype accepts aliases such as fp8 and bfloat16).
bool canonical(const std::string& text) {
  try {
    return std::string(to_string(parse_dtype(text))) == text;
  } catch (const std::exception&) {
    return false;
  }
}

TEST(ReferenceNames, DtypesAreSpeltAsOurResultsSpellThem) {
  int files = 0, mamf = 0, matches = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FB_SOURCE_DIR "/configs/references")) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    std::ifstream in(entry.path());
    const auto j = nlohmann::json::parse(in);
    for (const auto& r : j.at("results")) {
      const std::string where = entry.path().filename().string() + ": " + r.at("name").get<std::string>();
      const auto& params = r.at("params");
      const auto name = split(r.at("name"), '/');
      if (r.at("benchmark") == "gemm" && name.size() == 2 && name[1] == "mamf") {  // gemm --sweep: DTYPE/mamf
        EXPECT_TRUE(canonical(name[0])) << where;
        EXPECT_EQ(params.at("dtype"), name[0]) << where;
        ++mamf;
      }
      if (r.at("benchmark") == "train" && params.contains("match")) {  // model/layout/dtype/shape
        const auto pattern = split(params.at("match"), '/');
        ASSERT_EQ(pattern.size(), 4u) << where;
        EXPECT_TRUE(pattern[2] == "*" || canonical(pattern[2])) << where << ": " << pattern[2];
        ++matches;
      }
    }
  }
  EXPECT_EQ(files, 5);
  EXPECT_GE(mamf, 7);  // bf16 and fp8 on the H100, B200 and GB200; fp8 on the H200
  EXPECT_GE(matches, 10);
}

TEST(ReferenceNames, TheCheckRefusesTheSpellingsThatNeverPaired) {
  EXPECT_FALSE(canonical("fp8"));
  EXPECT_FALSE(canonical("bfloat16"));
  EXPECT_TRUE(canonical("fp8_e4m3"));
  EXPECT_TRUE(canonical("bf16"));
}

}  // namespace
}  // namespace fb
