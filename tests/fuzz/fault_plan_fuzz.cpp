// Fault plans (--faults SPEC|FILE): the JSON file form when the input is JSON, else the spec string, for a
// job of 4 slots of which 1 is a spare, over one day of job time.
#include "resilience/fault_plan.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (const auto j = fb::fuzz::json(data, size); j && j->is_object()) {
    fb::fuzz::expect_clean([&] { fb::resilience::parse_fault_json(*j, "faults.json", 4, 86400.0, 42, 1); });
    return 0;
  }
  const std::string s = fb::fuzz::text(data, size);
  fb::fuzz::expect_clean([&] { fb::resilience::parse_fault_spec(s, 4, 86400.0, 42, 1); });
  return 0;
}
