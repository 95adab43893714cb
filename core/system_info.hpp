#pragma once
// Facts about the host this rank runs on, read from /proc and /sys (the environment fingerprint's host part).
#include <cstdint>
#include <string>

namespace fb {

struct HostInfo {
  std::string hostname;
  std::string cpu_model;
  int cpu_cores_online = 0;  // logical CPUs online
  int cores_available = 0;   // CPUs in this process's affinity mask
  int cpu_max_mhz = 0;
  std::uint64_t memory_bytes = 0;            // MemTotal
  std::uint64_t memory_available_bytes = 0;  // MemAvailable
  std::string kernel;                        // uname release
  std::string os;                            // PRETTY_NAME of /etc/os-release
};

HostInfo read_host_info();

// This host's available memory (MemAvailable) shared by the `local_ranks` ranks that run on it (at least
// one): what one rank may use of host memory, the host backend's "device" memory and every GPU run's staging.
std::uint64_t host_memory_available_per_rank(int local_ranks);

}  // namespace fb
