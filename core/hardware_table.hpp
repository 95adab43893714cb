#pragma once
// Dense peak throughput per dtype for known accelerators (configs/hardware/*.json), matched by device name.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace fb {

struct HardwarePeaks {
  std::string name;                // "H200 SXM"
  std::string kind = "gpu";        // "gpu", or "cpu" for the host class (peaks measured, not tabled)
  std::vector<std::string> match;  // substrings of the CUDA device name
  // Words that make a matching name another product ("NVL": the H200 NVL is a 600 W PCIe card with 835 dense
  // bf16 TFLOP/s, not an H200 SXM): such a device gets no entry rather than the wrong peaks.
  std::vector<std::string> exclude;
  std::map<std::string, double>
      peak_tflops;  // dense (not sparse) TFLOP/s by dtype name: bf16, fp16, fp8, ...
  std::map<std::string, double> mamf_tflops;  // best achievable matmul measured by others, by dtype
  double hbm_tbps = 0;
  // health: fail the GEMM below this fraction of the class's expected throughput (MAMF on GPUs, the job's
  // median rank on the host); --gemm-floor overrides.
  std::optional<double> health_gemm_floor;
  // health's clocks check (fractions; unset: the defaults in workloads/health_check.hpp): fail a power limit
  // below power_limit_fail of the default, warn below power_limit_warn, warn a clock under load below
  // clock_under_load_warn of the max. A site that caps power on purpose sets its cap's fraction here.
  std::optional<double> health_power_limit_fail, health_power_limit_warn, health_clock_under_load_warn;
  std::string source;  // provenance of the figures
  std::string file;    // where it was loaded from
};

// One entry (one configs/hardware file); input Error naming `file` when a field is missing or mistyped.
HardwarePeaks parse_hardware_entry(const nlohmann::json& j, const std::string& file);
// All entries of configs/hardware; throws an input Error naming the file and field on malformed JSON.
std::vector<HardwarePeaks> load_hardware_table();
// The entry whose longest `match` substring starts a word of `device_name`, if any.
std::optional<HardwarePeaks> find_hardware(const std::vector<HardwarePeaks>& table,
                                           const std::string& device_name);

// The first entry of `kind` ("cpu": the host class), if any.
std::optional<HardwarePeaks> find_hardware_class(const std::vector<HardwarePeaks>& table,
                                                 const std::string& kind);

// The peak for a dtype name, with the usual aliases (fp8_e4m3/fp8_e5m2 -> fp8); nullopt when unknown.
std::optional<double> peak_for(const HardwarePeaks& hw, const std::string& dtype);

}  // namespace fb
