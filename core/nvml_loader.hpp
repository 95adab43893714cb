#pragma once
// NVML (the driver's management library), loaded at run time with dlopen("libnvidia-ml.so.1"): the toolkit
// has no nvml.h and a build must not need the driver, so the few stable C entry points used are declared in
// nvml_loader.cpp with their documented signatures. Nothing here throws for a missing library, a missing
// symbol or an unsupported query: the reading simply lacks that value ("unavailable").
//
// The library path can be overridden with $FACTORYBENCH_NVML_LIBRARY (tests point it at a fake NVML built
// from tests/fakes/fake_nvml.c).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fb::nvml {

// Bits of nvmlDeviceGetCurrentClocksEventReasons (nvml.h nvmlClocksEventReason*; the same bits the older
// nvmlDeviceGetCurrentClocksThrottleReasons returns).
inline constexpr std::uint64_t kReasonGpuIdle = 0x1;
inline constexpr std::uint64_t kReasonApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kReasonSwPowerCap = 0x4;
inline constexpr std::uint64_t kReasonHwSlowdown = 0x8;
inline constexpr std::uint64_t kReasonSyncBoost = 0x10;
inline constexpr std::uint64_t kReasonSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kReasonHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kReasonHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kReasonDisplayClockSetting = 0x100;
// Reasons that mean the hardware (or the driver, for heat) slowed the clocks below what was asked: the
// "active hardware slowdown" a health check fails on. Power capping and idling are normal operation.
inline constexpr std::uint64_t kSlowdownReasons =
    kReasonHwSlowdown | kReasonSwThermalSlowdown | kReasonHwThermalSlowdown | kReasonHwPowerBrakeSlowdown;

// "gpu_idle", "sw_power_cap", "hw_slowdown", ... for each set bit, lowest first; unknown bits as "bit_N".
std::vector<std::string> clock_event_reason_names(std::uint64_t mask);

// One reading of a device. Every field is empty when NVML did not answer it.
struct GpuReading {
  // Read on every sample (cheap queries).
  std::optional<double> sm_clock_mhz, mem_clock_mhz;
  std::optional<double> power_w;        // nvmlDeviceGetPowerUsage (mW) / 1000
  std::optional<double> temperature_c;  // GPU die (NVML_TEMPERATURE_GPU)
  std::optional<double> gpu_util_pct, mem_util_pct;
  std::optional<std::uint64_t> clock_event_reasons;
  // Error counters (more queries: read when `counters` is asked for).
  std::optional<std::uint64_t> ecc_corrected, ecc_uncorrected;  // volatile (since driver load), all memories
  std::optional<std::uint64_t> remapped_rows_corrected, remapped_rows_uncorrected;
  std::optional<bool> remap_pending, remap_failure;
  std::optional<std::uint64_t> pcie_replays;
  std::optional<std::uint64_t>
      nvlink_errors;  // Σ over active links of replay + recovery + CRC flit + CRC data
};

// Facts that do not change during a run.
struct GpuLimits {
  std::string name;  // "NVIDIA H200"
  std::optional<double> max_sm_clock_mhz, max_mem_clock_mhz;
  std::optional<double> power_limit_w;          // enforced limit
  std::optional<double> default_power_limit_w;  // the board's default limit
  std::optional<std::uint64_t> memory_total_bytes, memory_free_bytes;
};

class Library;

class Device {
 public:
  GpuReading read(bool counters) const;
  GpuLimits limits() const;
  int index() const { return index_; }

 private:
  friend class Library;
  Device(std::shared_ptr<const Library> library, void* handle, int index)
      : library_(std::move(library)), handle_(handle), index_(index) {}
  std::shared_ptr<const Library> library_;
  void* handle_ = nullptr;  // nvmlDevice_t
  int index_ = -1;
};

class Library : public std::enable_shared_from_this<Library> {
 public:
  // $FACTORYBENCH_NVML_LIBRARY when set, else "libnvidia-ml.so.1".
  static std::string default_path();
  // dlopen + nvmlInit_v2. Never throws: available() is false and reason() says why when it failed.
  static std::shared_ptr<Library> open(const std::string& path = default_path());

  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  bool available() const { return api_ != nullptr; }
  const std::string& reason() const { return reason_; }
  const std::string& path() const { return path_; }
  unsigned device_count() const;

  // The device with this PCI bus id ("0000:3B:00.0", as cudaDeviceGetPCIBusId writes it); only when the
  // bus id is empty, the one with NVML index `index` (the CUDA ordinal differs from NVML's under
  // CUDA_VISIBLE_DEVICES, so an unmatched bus id is no device, not a guess). Empty with `why` set otherwise.
  std::optional<Device> device(const std::string& pci_bus_id, int index, std::string* why = nullptr) const;

  // Text of an NVML return code (nvmlErrorString when present).
  std::string error_string(int code) const;

  struct Api;  // resolved entry points (nvml_loader.cpp)

 private:
  friend class Device;
  Library() = default;
  void* dl_ = nullptr;
  std::unique_ptr<Api> api_;
  std::string path_;
  std::string reason_;
};

}  // namespace fb::nvml
