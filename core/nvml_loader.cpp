#include "core/nvml_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace fb::nvml {
// Named, not anonymous: Library::Api's members have these types, and a class with external linkage must
// not use an anonymous namespace's types (GCC's -Wsubobject-linkage, seen in a unity build).
namespace c_abi {

// The NVML C ABI, as documented in nvml.h (NVML API Reference). nvmlReturn_t and the enum parameters are
// C enums (int); nvmlDevice_t is an opaque pointer.
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1;  // nvmlClockType_t
constexpr int NVML_CLOCK_MEM = 2;
constexpr int NVML_TEMPERATURE_GPU = 0;              // nvmlTemperatureSensors_t
constexpr int NVML_MEMORY_ERROR_TYPE_CORRECTED = 0;  // nvmlMemoryErrorType_t
constexpr int NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
constexpr int NVML_VOLATILE_ECC = 0;     // nvmlEccCounterType_t
constexpr int NVML_FEATURE_ENABLED = 1;  // nvmlEnableState_t
constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
// nvmlNvLinkErrorCounter_t: DL_REPLAY 0, DL_RECOVERY 1, DL_CRC_FLIT 2, DL_CRC_DATA 3.
constexpr int kNvlinkErrorCounters = 4;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

template <typename F>
F symbol(void* dl, const char* name) {
  void* p = dlsym(dl, name);
  F f = nullptr;
  static_assert(sizeof(f) == sizeof(p));
  std::memcpy(&f, &p, sizeof(f));  // object → function pointer, as POSIX dlsym intends
  return f;
}

}  // namespace c_abi
using namespace c_abi;

struct Library::Api {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*get_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*handle_by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*max_clock_info)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned int*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*total_ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*remapped_rows)(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*,
                                unsigned int*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*default_power_limit)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*memory_info)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*pcie_replays)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned int, int*) = nullptr;
  nvmlReturn_t (*nvlink_error_counter)(nvmlDevice_t, unsigned int, int, unsigned long long*) = nullptr;
};

std::vector<std::string> clock_event_reason_names(std::uint64_t mask) {
  static constexpr const char* kNames[] = {"gpu_idle",
                                           "applications_clocks_setting",
                                           "sw_power_cap",
                                           "hw_slowdown",
                                           "sync_boost",
                                           "sw_thermal_slowdown",
                                           "hw_thermal_slowdown",
                                           "hw_power_brake_slowdown",
                                           "display_clock_setting"};
  std::vector<std::string> names;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (!(mask & (std::uint64_t{1} << bit))) continue;
    names.push_back(bit < std::size(kNames) ? kNames[bit] : fmt::format("bit_{}", bit));
  }
  return names;
}

std::string Library::default_path() {
  const char* env = std::getenv("FACTORYBENCH_NVML_LIBRARY");
  return env && *env ? env : "libnvidia-ml.so.1";
}

std::shared_ptr<Library> Library::open(const std::string& path) {
  std::shared_ptr<Library> lib(new Library());
  lib->path_ = path;
  lib->dl_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->dl_) {
    const char* err = dlerror();
    lib->reason_ = fmt::format("cannot load {}: {}", path, err ? err : "unknown dlopen error");
    return lib;
  }
  auto api = std::make_unique<Api>();
  void* dl = lib->dl_;
  api->init = symbol<decltype(api->init)>(dl, "nvmlInit_v2");
  api->shutdown = symbol<decltype(api->shutdown)>(dl, "nvmlShutdown");
  api->error_string = symbol<decltype(api->error_string)>(dl, "nvmlErrorString");
  api->get_count = symbol<decltype(api->get_count)>(dl, "nvmlDeviceGetCount_v2");
  api->handle_by_index = symbol<decltype(api->handle_by_index)>(dl, "nvmlDeviceGetHandleByIndex_v2");
  api->handle_by_pci = symbol<decltype(api->handle_by_pci)>(dl, "nvmlDeviceGetHandleByPciBusId_v2");
  api->get_name = symbol<decltype(api->get_name)>(dl, "nvmlDeviceGetName");
  api->clock_info = symbol<decltype(api->clock_info)>(dl, "nvmlDeviceGetClockInfo");
  api->max_clock_info = symbol<decltype(api->max_clock_info)>(dl, "nvmlDeviceGetMaxClockInfo");
  api->power_usage = symbol<decltype(api->power_usage)>(dl, "nvmlDeviceGetPowerUsage");
  api->temperature = symbol<decltype(api->temperature)>(dl, "nvmlDeviceGetTemperature");
  api->utilization = symbol<decltype(api->utilization)>(dl, "nvmlDeviceGetUtilizationRates");
  // Renamed in driver 535 (CUDA 12.2); the old name stays exported by newer drivers, the new one is absent
  // from older ones.
  api->clock_event_reasons =
      symbol<decltype(api->clock_event_reasons)>(dl, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!api->clock_event_reasons)
    api->clock_event_reasons =
        symbol<decltype(api->clock_event_reasons)>(dl, "nvmlDeviceGetCurrentClocksThrottleReasons");
  api->total_ecc_errors = symbol<decltype(api->total_ecc_errors)>(dl, "nvmlDeviceGetTotalEccErrors");
  api->remapped_rows = symbol<decltype(api->remapped_rows)>(dl, "nvmlDeviceGetRemappedRows");
  api->power_limit = symbol<decltype(api->power_limit)>(dl, "nvmlDeviceGetEnforcedPowerLimit");
  if (!api->power_limit)
    api->power_limit = symbol<decltype(api->power_limit)>(dl, "nvmlDeviceGetPowerManagementLimit");
  api->default_power_limit =
      symbol<decltype(api->default_power_limit)>(dl, "nvmlDeviceGetPowerManagementDefaultLimit");
  api->memory_info = symbol<decltype(api->memory_info)>(dl, "nvmlDeviceGetMemoryInfo");
  api->pcie_replays = symbol<decltype(api->pcie_replays)>(dl, "nvmlDeviceGetPcieReplayCounter");
  api->nvlink_state = symbol<decltype(api->nvlink_state)>(dl, "nvmlDeviceGetNvLinkState");
  api->nvlink_error_counter =
      symbol<decltype(api->nvlink_error_counter)>(dl, "nvmlDeviceGetNvLinkErrorCounter");

  if (!api->init || !api->shutdown || !api->handle_by_index) {
    lib->reason_ = fmt::format("{} lacks nvmlInit_v2, nvmlShutdown or nvmlDeviceGetHandleByIndex_v2", path);
    return lib;
  }
  if (const nvmlReturn_t rc = api->init(); rc != NVML_SUCCESS) {
    const char* text = api->error_string ? api->error_string(rc) : nullptr;
    lib->reason_ = fmt::format("nvmlInit_v2 failed: {} ({})", text ? text : "unknown error", rc);
    return lib;
  }
  lib->api_ = std::move(api);
  return lib;
}

Library::~Library() {
  if (api_) api_->shutdown();
  if (dl_) dlclose(dl_);
}

std::string Library::error_string(int code) const {
  const char* text = api_ && api_->error_string ? api_->error_string(code) : nullptr;
  return text ? fmt::format("{} ({})", text, code) : fmt::format("NVML error {}", code);
}

unsigned Library::device_count() const {
  unsigned n = 0;
  if (!api_ || !api_->get_count || api_->get_count(&n) != NVML_SUCCESS) return 0;
  return n;
}

std::optional<Device> Library::device(const std::string& pci_bus_id, int index, std::string* why) const {
  const auto set_why = [&](std::string text) {
    if (why) *why = std::move(text);
  };
  if (!api_) {
    set_why(reason_);
    return std::nullopt;
  }
  nvmlDevice_t handle = nullptr;
  // A known bus id is the match: falling back to the index would read another GPU's clocks and ECC counts
  // under CUDA_VISIBLE_DEVICES, where the CUDA ordinal is not NVML's index.
  if (!pci_bus_id.empty()) {
    if (!api_->handle_by_pci) {
      set_why(
          fmt::format("this NVML lacks nvmlDeviceGetHandleByPciBusId_v2, so the GPU at PCI bus id '{}' "
                      "cannot be matched (an index can name another GPU under CUDA_VISIBLE_DEVICES)",
                      pci_bus_id));
      return std::nullopt;
    }
    const nvmlReturn_t rc = api_->handle_by_pci(pci_bus_id.c_str(), &handle);
    if (rc == NVML_SUCCESS) return Device(shared_from_this(), handle, index);
    set_why(
        fmt::format("no NVML device at PCI bus id '{}': {} (not matched by its index: under "
                    "CUDA_VISIBLE_DEVICES that can name another GPU)",
                    pci_bus_id, error_string(rc)));
    return std::nullopt;
  }
  if (index >= 0) {
    const nvmlReturn_t rc = api_->handle_by_index(static_cast<unsigned>(index), &handle);
    if (rc == NVML_SUCCESS) return Device(shared_from_this(), handle, index);
    set_why(fmt::format("no NVML device at index {}: {}", index, error_string(rc)));
    return std::nullopt;
  }
  set_why("the device has neither a PCI bus id nor an index to match in NVML");
  return std::nullopt;
}

GpuReading Device::read(bool counters) const {
  const Library::Api& api = *library_->api_;
  GpuReading r;
  unsigned v = 0;
  unsigned long long u = 0;
  if (api.clock_info && api.clock_info(handle_, NVML_CLOCK_SM, &v) == NVML_SUCCESS) r.sm_clock_mhz = v;
  if (api.clock_info && api.clock_info(handle_, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) r.mem_clock_mhz = v;
  if (api.power_usage && api.power_usage(handle_, &v) == NVML_SUCCESS) r.power_w = v / 1000.0;
  if (api.temperature && api.temperature(handle_, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS)
    r.temperature_c = v;
  if (nvmlUtilization_t util{}; api.utilization && api.utilization(handle_, &util) == NVML_SUCCESS) {
    r.gpu_util_pct = util.gpu;
    r.mem_util_pct = util.memory;
  }
  if (api.clock_event_reasons && api.clock_event_reasons(handle_, &u) == NVML_SUCCESS)
    r.clock_event_reasons = u;
  if (!counters) return r;

  if (api.total_ecc_errors) {
    if (api.total_ecc_errors(handle_, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &u) ==
        NVML_SUCCESS)
      r.ecc_corrected = u;
    if (api.total_ecc_errors(handle_, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &u) ==
        NVML_SUCCESS)
      r.ecc_uncorrected = u;
  }
  if (unsigned corr = 0, unc = 0, pending = 0, failure = 0;
      api.remapped_rows && api.remapped_rows(handle_, &corr, &unc, &pending, &failure) == NVML_SUCCESS) {
    r.remapped_rows_corrected = corr;
    r.remapped_rows_uncorrected = unc;
    r.remap_pending = pending != 0;
    r.remap_failure = failure != 0;
  }
  if (api.pcie_replays && api.pcie_replays(handle_, &v) == NVML_SUCCESS) r.pcie_replays = v;
  if (api.nvlink_state && api.nvlink_error_counter) {
    std::uint64_t total = 0;
    bool any = false;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      int active = 0;
      if (api.nvlink_state(handle_, link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED)
        continue;
      for (int counter = 0; counter < kNvlinkErrorCounters; ++counter)
        if (api.nvlink_error_counter(handle_, link, counter, &u) == NVML_SUCCESS) {
          total += u;
          any = true;
        }
    }
    if (any) r.nvlink_errors = total;
  }
  return r;
}

GpuLimits Device::limits() const {
  const Library::Api& api = *library_->api_;
  GpuLimits l;
  char name[96] = {};
  if (api.get_name && api.get_name(handle_, name, sizeof(name)) == NVML_SUCCESS) l.name = name;
  unsigned v = 0;
  if (api.max_clock_info && api.max_clock_info(handle_, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
    l.max_sm_clock_mhz = v;
  if (api.max_clock_info && api.max_clock_info(handle_, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
    l.max_mem_clock_mhz = v;
  if (api.power_limit && api.power_limit(handle_, &v) == NVML_SUCCESS) l.power_limit_w = v / 1000.0;
  if (api.default_power_limit && api.default_power_limit(handle_, &v) == NVML_SUCCESS)
    l.default_power_limit_w = v / 1000.0;
  if (nvmlMemory_t m{}; api.memory_info && api.memory_info(handle_, &m) == NVML_SUCCESS) {
    l.memory_total_bytes = m.total;
    l.memory_free_bytes = m.free;
  }
  return l;
}

}  // namespace fb::nvml
