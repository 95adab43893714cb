#pragma once
// What the host is doing, from /proc and /sys: CPU clocks, load, memory, temperatures, memory errors.
// Every reader takes the root directory ("/" live, a fixture folder in tests) and returns empty values for
// files that are missing or unreadable (a VM often has no cpufreq or thermal zones): never throws.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fb::host {

// Current clock of each listed CPU in MHz: cpu*/cpufreq/scaling_cur_freq (kHz) where present, else the
// "cpu MHz" lines of /proc/cpuinfo (then `cpus` selects by "processor" number). Empty `cpus` = all.
std::vector<double> read_cpu_mhz(const std::filesystem::path& root, const std::vector<int>& cpus = {});
// Highest cpuinfo_max_freq of the listed CPUs (MHz), if cpufreq exposes it.
std::optional<double> read_cpu_max_mhz(const std::filesystem::path& root, const std::vector<int>& cpus = {});

struct LoadAverage {
  double load1 = 0, load5 = 0, load15 = 0;
  int runnable = 0, threads = 0;  // "2/345" field
};
std::optional<LoadAverage> read_loadavg(const std::filesystem::path& root);

struct MemoryInfo {
  std::uint64_t total_bytes = 0;
  std::uint64_t available_bytes = 0;  // MemAvailable (MemFree + Buffers + Cached on kernels without it)
  std::uint64_t free_bytes = 0;
};
std::optional<MemoryInfo> read_meminfo(const std::filesystem::path& root);

struct ThermalZone {
  std::string name;  // thermal_zone0
  std::string type;  // x86_pkg_temp, acpitz, ...
  double celsius = 0;
};
// /sys/class/thermal/thermal_zone*/temp (millidegrees), sorted by zone name.
std::vector<ThermalZone> read_thermal_zones(const std::filesystem::path& root);

// Memory errors counted by the kernel's EDAC drivers over all memory controllers
// (/sys/devices/system/edac/mc/mc*/ce_count, ue_count); empty when no EDAC driver is loaded.
struct EdacCounts {
  std::uint64_t corrected = 0, uncorrected = 0;
  int controllers = 0;
};
std::optional<EdacCounts> read_edac(const std::filesystem::path& root);

// One sample of the host, as the telemetry sampler records it.
struct HostReading {
  std::optional<double> cpu_mhz_min, cpu_mhz_median, cpu_mhz_max;  // over the selected CPUs
  std::optional<double> load1;
  std::optional<double> mem_available_bytes;
  std::optional<double> temperature_c;  // hottest thermal zone
};

// Reads the CPUs this process may run on (its affinity mask), so a rank sees its own cores.
class HostReader {
 public:
  explicit HostReader(std::filesystem::path root = "/", std::vector<int> cpus = {});
  // /proc/cpuinfo (the CPU clock source when cpufreq is absent) can take milliseconds to read and, on some
  // kernels, interrupts every CPU to sample its clock: it is read only when `slow` is true (the sampler asks
  // about once a second).
  HostReading read(bool slow = true) const;
  bool has_cpufreq() const { return cpufreq_; }
  const std::vector<int>& cpus() const { return cpus_; }

 private:
  std::filesystem::path root_;
  std::vector<int> cpus_;
  bool cpufreq_ = false;  // scaling_cur_freq exists (else /proc/cpuinfo, which is slower to read)
};

// CPUs in this process's affinity mask (sched_getaffinity), ascending.
std::vector<int> affinity_cpus();

}  // namespace fb::host
