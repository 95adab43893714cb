// nccl-tests console output (factorybench import nccl-tests FILE).
#include "reports/import_nccl_tests.hpp"
#include "reports/report_json.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = fb::fuzz::text(data, size);
  fb::fuzz::expect_clean([&] { fb::reports::to_json(fb::reports::import_nccl_tests(s, "nccl-tests.txt")); });
  return 0;
}
