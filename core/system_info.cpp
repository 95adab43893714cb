#include "core/system_info.hpp"

#include <algorithm>

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace fb {
namespace {

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\"");
  const auto e = s.find_last_not_of(" \t\"\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::uint64_t meminfo_kib(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      std::istringstream ss(line.substr(key.size() + 1));
      std::uint64_t kib = 0;
      ss >> kib;
      return kib;
    }
  }
  return 0;
}

}  // namespace

HostInfo read_host_info() {
  HostInfo h;
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  h.hostname = name;
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    double mhz = 0;
    while (std::getline(in, line)) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = trim(line.substr(0, colon));
      if (key == "model name" && h.cpu_model.empty()) h.cpu_model = trim(line.substr(colon + 1));
      if (key == "cpu MHz") mhz = std::max(mhz, std::atof(line.c_str() + colon + 1));
    }
    std::ifstream max_freq("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    long khz = 0;
    if (max_freq >> khz && khz > 0) mhz = static_cast<double>(khz) / 1000.0;
    h.cpu_max_mhz = static_cast<int>(mhz);
  }
  if (h.cpu_model.empty()) h.cpu_model = "unknown CPU";
  h.cpu_cores_online = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  h.cores_available = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : h.cpu_cores_online;
  h.memory_bytes = meminfo_kib("MemTotal") * 1024;
  h.memory_available_bytes = meminfo_kib("MemAvailable") * 1024;
  utsname u{};
  if (uname(&u) == 0) h.kernel = std::string(u.sysname) + " " + u.release;
  std::ifstream os("/etc/os-release");
  std::string line;
  while (std::getline(os, line))
    if (line.rfind("PRETTY_NAME=", 0) == 0) h.os = trim(line.substr(12));
  return h;
}

std::uint64_t host_memory_available_per_rank(int local_ranks) {
  return read_host_info().memory_available_bytes / static_cast<std::uint64_t>(std::max(local_ranks, 1));
}

}  // namespace fb
