// The shipped hardware table against the published dense peaks and MAMF figures. MFU is only as right as
// its denominator: an entry edited by hand (a sparse figure, a typo) would shift every MFU of that class.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "core/hardware_table.hpp"

namespace fb {
namespace {

struct Published {
  const char* device;  // a CUDA device name of the class
  const char* entry;
  std::map<std::string, double> peak;  // dense TFLOP/s (datasheet sparse figures are 2x)
  double hbm_tbps;
  std::map<std::string, double> mamf;  // stas00/ml-engineering compute/accelerator
};

// Vendor datasheets (dense); bf16/fp8/fp4 as torchtitan's get_peak_flops and stas00/ml-engineering use them.
const Published kPublished[] = {
    {"NVIDIA H100 80GB HBM3",
     "H100 SXM",
     {{"bf16", 989}, {"fp16", 989}, {"fp8", 1979}, {"tf32", 494}, {"fp64", 67}},
     3.35,
     {{"bf16", 794.5}, {"fp8", 1402.6}}},
    {"NVIDIA H200",
     "H200 SXM",
     {{"bf16", 989}, {"fp16", 989}, {"fp8", 1979}, {"tf32", 494}, {"fp64", 67}},
     4.8,
     {{"fp8", 1453.4}}},
    {"NVIDIA B200",
     "B200 (HGX)",
     {{"bf16", 2250}, {"fp16", 2250}, {"fp8", 4500}, {"fp4", 9000}, {"tf32", 1100}, {"fp64", 40}},
     8,
     {{"bf16", 1745}, {"fp8", 3432.5}}},
    {"NVIDIA GB200",
     "GB200",
     {{"bf16", 2500}, {"fp16", 2500}, {"fp8", 5000}, {"fp4", 10000}, {"tf32", 1250}, {"fp64", 45}},
     8,
     {{"bf16", 1822}, {"fp8", 3615.6}}},
    {"NVIDIA GB300",
     "GB300",
     {{"bf16", 2500}, {"fp16", 2500}, {"fp8", 5000}, {"fp4", 15000}, {"tf32", 1250}, {"fp64", 1.25}},
     8,
     {}},
    // Ampere has no fp8; A100 and GH200 HBM bandwidth differs by SKU, so neither entry gives one (0).
    {"NVIDIA A100-SXM4-80GB",
     "A100",
     {{"bf16", 312}, {"fp16", 312}, {"tf32", 156}, {"fp32", 19.5}, {"fp64", 19.5}},
     0,
     {{"bf16", 271.2}}},
    {"NVIDIA A100-PCIE-40GB", "A100", {{"bf16", 312}}, 0, {{"bf16", 271.2}}},
    {"NVIDIA GH200 480GB",
     "GH200",
     {{"bf16", 989}, {"fp16", 989}, {"fp8", 1979}, {"tf32", 494}, {"fp32", 67}, {"fp64", 67}},
     0,
     {{"bf16", 828.6}}},
    // The PCIe cards: datasheet sparse bf16 1513 (H100 PCIe) and 1671 (NVL; torchtitan uses 835), halved.
    {"NVIDIA H100 PCIe",
     "H100 PCIe",
     {{"bf16", 756}, {"fp16", 756}, {"fp8", 1513}, {"tf32", 378}, {"fp32", 51}, {"fp64", 51}},
     2.0,
     {}},
    {"NVIDIA H100 NVL",
     "H100 NVL",
     {{"bf16", 835}, {"fp16", 835}, {"fp8", 1670.5}, {"tf32", 417.5}, {"fp32", 60}, {"fp64", 60}},
     3.9,
     {}},
    {"NVIDIA H200 NVL",
     "H200 NVL",
     {{"bf16", 835}, {"fp16", 835}, {"fp8", 1670.5}, {"tf32", 417.5}, {"fp32", 60}, {"fp64", 60}},
     4.8,
     {}},
};

TEST(HardwareTable, PeaksAndMamfAreThePublishedFigures) {
  setenv("FACTORYBENCH_CONFIG_DIR", FB_SOURCE_DIR "/configs", 1);
  const auto table = load_hardware_table();
  for (const auto& p : kPublished) {
    const auto hw = find_hardware(table, p.device);
    ASSERT_TRUE(hw) << p.device;
    EXPECT_EQ(hw->name.rfind(p.entry, 0), 0u) << p.device << " matched " << hw->name;
    for (const auto& [dtype, tflops] : p.peak) {
      ASSERT_TRUE(peak_for(*hw, dtype)) << p.entry << " " << dtype;
      EXPECT_DOUBLE_EQ(*peak_for(*hw, dtype), tflops) << p.entry << " " << dtype;
    }
    // fp8 formats take the fp8 peak.
    EXPECT_EQ(peak_for(*hw, "fp8_e4m3"), peak_for(*hw, "fp8"));
    EXPECT_DOUBLE_EQ(hw->hbm_tbps, p.hbm_tbps) << p.entry;
    for (const auto& [dtype, tflops] : p.mamf) {
      ASSERT_TRUE(hw->mamf_tflops.count(dtype)) << p.entry << " MAMF " << dtype;
      EXPECT_DOUBLE_EQ(hw->mamf_tflops.at(dtype), tflops) << p.entry << " MAMF " << dtype;
    }
  }
}

// H100 SXM bf16 from its clocks: 1830 MHz boost x 528 tensor cores x 512 dense bf16 FMA per clock per
// tensor core x 2 FLOP per FMA = 989.4 TFLOP/s, the table's 989 rounded.
TEST(HardwareTable, H100PeakFollowsFromItsClocks) {
  const double derived = 1830e6 * 528 * 512 * 2 / 1e12;
  EXPECT_NEAR(derived, 989.4, 0.05);
  setenv("FACTORYBENCH_CONFIG_DIR", FB_SOURCE_DIR "/configs", 1);
  const auto hw = find_hardware(load_hardware_table(), "NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(hw);
  EXPECT_NEAR(*peak_for(*hw, "bf16"), derived, 0.5);
  // MAMF over peak: the 80.3% of REFERENCES' MAMF table.
  EXPECT_NEAR(hw->mamf_tflops.at("bf16") / *peak_for(*hw, "bf16"), 0.803, 0.0005);
}

}  // namespace
}  // namespace fb
