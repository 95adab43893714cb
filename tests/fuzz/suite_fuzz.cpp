// Suite files (factorybench suite FILE): the JSON, then every step through the command table, as
// `suite --list` does before running anything.
#include "tests/fuzz/fuzz_common.hpp"
#include "tools/suite_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = fb::fuzz::json(data, size);
  if (!j) return 0;
  fb::fuzz::expect_clean([&] {
    const auto suite = fb::tools::parse_suite(*j, "suite.json", "fuzz");
    for (const auto& step : suite.steps) fb::fuzz::expect_clean([&] { fb::tools::parse_suite_step(step); });
  });
  return 0;
}
