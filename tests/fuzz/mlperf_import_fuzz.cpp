// MLPerf Training result logs (factorybench import mlperf FILE...): the input split at form feeds into
// several logs, so the score over several runs is reached too; and the whole input as a scaling.json.
#include <vector>

#include "reports/import_mlperf.hpp"
#include "reports/report_json.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = fb::fuzz::text(data, size);
  std::vector<fb::reports::MlperfLog> logs;
  std::size_t begin = 0;
  while (logs.size() < 12) {
    const auto end = s.find('\f', begin);
    logs.push_back({"result_" + std::to_string(logs.size()) + ".txt", s.substr(begin, end - begin)});
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  fb::fuzz::expect_clean([&] { fb::reports::to_json(fb::reports::import_mlperf(logs)); });
  // The same bytes as a results folder's scaling.json.
  fb::fuzz::expect_clean([&] { fb::reports::parse_mlperf_scaling("scaling.json", s); });
  return 0;
}
