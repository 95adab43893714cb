// Size and duration parsers (-b 8K, --hang-timeout 30s, --repair-time 48h) and their printers.
#include "core/units.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string s = fb::fuzz::text(data, size);
  fb::fuzz::expect_clean([&] { fb::format_bytes(fb::parse_size(s, "--size")); });
  fb::fuzz::expect_clean([&] { fb::format_duration(fb::parse_duration(s, "--duration")); });
  return 0;
}
