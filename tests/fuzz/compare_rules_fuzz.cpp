// Compare rules (factorybench compare --rules FILE): the JSON file; for other inputs, the text as one bound
// rule ("<=5%", ">=0.9"), a tolerance and a glob pattern matched against itself and a result name.
#include "reports/compare_rules.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (const auto j = fb::fuzz::json(data, size)) {
    fb::fuzz::expect_clean([&] { fb::reports::compare_rules_from_json(*j, "rules.json"); });
    return 0;
  }
  const std::string s = fb::fuzz::text(data, size);
  fb::fuzz::expect_clean([&] { fb::reports::parse_bound_rule(s, "$.metrics.x"); });
  fb::fuzz::expect_clean([&] { fb::reports::parse_tolerance(s, "--tolerance"); });
  fb::reports::glob_match(s, "gemm/bf16/8192x8192x8192");
  fb::reports::glob_match(s, s);
  return 0;
}
