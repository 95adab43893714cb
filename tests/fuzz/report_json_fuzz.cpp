// Report JSON (factorybench report/compare/--calibrate inputs): read, then written and read back, which must
// give the same document: a report the reader accepts is one the writer can reproduce.
#include "reports/report_json.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = fb::fuzz::json(data, size);
  if (!j) return 0;
  fb::fuzz::expect_clean([&] {
    const auto report = fb::reports::report_from_json(*j, "fuzz.json");
    const auto written = fb::reports::to_json(report);
    const auto again = fb::reports::to_json(fb::reports::report_from_json(written, "written.json"));
    if (again != written) {
      std::fprintf(stderr, "fuzz: report JSON does not round-trip\n");
      std::abort();
    }
  });
  return 0;
}
