// Failure models (simulate --failure-model FILE): parsed, then the job MTBF of an allocation from it.
#include "resilience/failure_model.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = fb::fuzz::json(data, size);
  if (!j) return 0;
  fb::fuzz::expect_clean([&] {
    const auto m = fb::resilience::parse_failure_model(*j, "failure-model.json");
    fb::resilience::job_mtbf_s(m, 16384, m.gpus_per_node > 0 ? m.gpus_per_node : 8);
  });
  return 0;
}
