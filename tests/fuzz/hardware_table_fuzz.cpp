// Hardware tables (configs/hardware/*.json): one entry, then a lookup by device name and dtype.
#include "core/hardware_table.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = fb::fuzz::json(data, size);
  if (!j) return 0;
  fb::fuzz::expect_clean([&] {
    const std::vector<fb::HardwarePeaks> table{fb::parse_hardware_entry(*j, "hardware.json")};
    if (const auto hw = fb::find_hardware(table, "NVIDIA H200")) fb::peak_for(*hw, "fp8_e4m3");
  });
  return 0;
}
