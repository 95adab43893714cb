// Model configs (--model FILE, configs/models): parsed and validated as load_model does.
#include "tests/fuzz/fuzz_common.hpp"
#include "workloads/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = fb::fuzz::text(data, size);
  fb::fuzz::expect_clean([&] {
    const auto m = fb::workloads::parse_model_json(s, "model.json");
    fb::workloads::validate_model(m, "model.json");
  });
  return 0;
}
