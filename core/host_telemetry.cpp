#include "core/host_telemetry.hpp"

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

namespace fb::host {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_small_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::optional<double> read_number(const fs::path& path) {
  const auto text = read_small_file(path);
  if (!text) return std::nullopt;
  const char* b = text->data();
  const char* e = b + text->size();
  while (b < e && std::isspace(static_cast<unsigned char>(*b))) ++b;
  double v = 0;
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr == b) return std::nullopt;
  return v;
}

// Names like "cpu12" / "thermal_zone3" / "mc0": prefix followed only by digits; returns the number.
std::optional<int> numbered(const std::string& name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  int v = 0;
  const char* b = name.data() + prefix.size();
  const char* e = name.data() + name.size();
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || ptr != e) return std::nullopt;
  return v;
}

// Numbered entries of `dir` with `prefix`, by number.
std::map<int, fs::path> numbered_entries(const fs::path& dir, std::string_view prefix) {
  std::map<int, fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (const auto n = numbered(it->path().filename().string(), prefix)) out[*n] = it->path();
  return out;
}

std::vector<int> all_cpus(const fs::path& root) {
  std::vector<int> cpus;
  for (const auto& [n, path] : numbered_entries(root / "sys/devices/system/cpu", "cpu")) cpus.push_back(n);
  return cpus;
}

// "cpu MHz" of each "processor" block of /proc/cpuinfo.
std::map<int, double> cpuinfo_mhz(const fs::path& root) {
  std::map<int, double> out;
  std::ifstream in(root / "proc/cpuinfo");
  std::string line;
  int processor = -1;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    std::string value = line.substr(colon + 1);
    const auto start = value.find_first_not_of(" \t");
    value = start == std::string::npos ? std::string() : value.substr(start);
    if (key == "processor") {
      processor = std::atoi(value.c_str());
    } else if (key == "cpu MHz" && processor >= 0) {
      double v = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec == std::errc() && ptr != value.data()) out[processor] = v;
    }
  }
  return out;
}

}  // namespace

std::vector<double> read_cpu_mhz(const fs::path& root, const std::vector<int>& cpus) {
  const std::vector<int> selected = cpus.empty() ? all_cpus(root) : cpus;
  std::vector<double> mhz;
  const fs::path base = root / "sys/devices/system/cpu";
  for (const int cpu : selected)
    if (const auto khz = read_number(base / ("cpu" + std::to_string(cpu)) / "cpufreq/scaling_cur_freq"))
      mhz.push_back(*khz / 1000.0);
  if (!mhz.empty()) return mhz;
  const auto info = cpuinfo_mhz(root);
  if (cpus.empty()) {
    for (const auto& [n, v] : info) mhz.push_back(v);
  } else {
    for (const int cpu : cpus)
      if (const auto it = info.find(cpu); it != info.end()) mhz.push_back(it->second);
  }
  return mhz;
}

std::optional<double> read_cpu_max_mhz(const fs::path& root, const std::vector<int>& cpus) {
  const std::vector<int> selected = cpus.empty() ? all_cpus(root) : cpus;
  std::optional<double> best;
  const fs::path base = root / "sys/devices/system/cpu";
  for (const int cpu : selected)
    if (const auto khz = read_number(base / ("cpu" + std::to_string(cpu)) / "cpufreq/cpuinfo_max_freq"))
      best = std::max(best.value_or(0.0), *khz / 1000.0);
  return best;
}

std::optional<LoadAverage> read_loadavg(const fs::path& root) {
  const auto text = read_small_file(root / "proc/loadavg");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  LoadAverage l;
  std::string tasks;
  if (!(in >> l.load1 >> l.load5 >> l.load15)) return std::nullopt;
  if (in >> tasks) {
    const auto slash = tasks.find('/');
    if (slash != std::string::npos) {
      l.runnable = std::atoi(tasks.substr(0, slash).c_str());
      l.threads = std::atoi(tasks.substr(slash + 1).c_str());
    }
  }
  return l;
}

std::optional<MemoryInfo> read_meminfo(const fs::path& root) {
  std::ifstream in(root / "proc/meminfo");
  if (!in) return std::nullopt;
  std::map<std::string, std::uint64_t> kib;
  std::string key;
  std::uint64_t value = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    if (ls >> key >> value) {
      if (!key.empty() && key.back() == ':') key.pop_back();
      kib[key] = value;
    }
  }
  if (!kib.contains("MemTotal")) return std::nullopt;
  MemoryInfo m;
  m.total_bytes = kib["MemTotal"] * 1024;
  m.free_bytes = kib["MemFree"] * 1024;
  // Kernels before 3.14 have no MemAvailable: free + page cache is the usual estimate.
  m.available_bytes = kib.contains("MemAvailable") ? kib["MemAvailable"] * 1024
                                                   : (kib["MemFree"] + kib["Buffers"] + kib["Cached"]) * 1024;
  return m;
}

std::vector<ThermalZone> read_thermal_zones(const fs::path& root) {
  std::vector<ThermalZone> zones;
  for (const auto& [n, path] : numbered_entries(root / "sys/class/thermal", "thermal_zone")) {
    const auto milli = read_number(path / "temp");
    if (!milli) continue;  // a zone whose sensor is absent reads as an error
    ThermalZone z;
    z.name = path.filename().string();
    if (auto type = read_small_file(path / "type")) {
      while (!type->empty() && std::isspace(static_cast<unsigned char>(type->back()))) type->pop_back();
      z.type = *type;
    }
    z.celsius = *milli / 1000.0;
    zones.push_back(std::move(z));
  }
  return zones;
}

std::optional<EdacCounts> read_edac(const fs::path& root) {
  EdacCounts c;
  for (const auto& [n, path] : numbered_entries(root / "sys/devices/system/edac/mc", "mc")) {
    const auto ce = read_number(path / "ce_count");
    const auto ue = read_number(path / "ue_count");
    if (!ce && !ue) continue;
    c.corrected += static_cast<std::uint64_t>(ce.value_or(0));
    c.uncorrected += static_cast<std::uint64_t>(ue.value_or(0));
    ++c.controllers;
  }
  if (c.controllers == 0) return std::nullopt;
  return c;
}

std::vector<int> affinity_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

HostReader::HostReader(fs::path root, std::vector<int> cpus)
    : root_(std::move(root)), cpus_(std::move(cpus)) {
  const int first = cpus_.empty() ? 0 : cpus_.front();
  std::error_code ec;
  cpufreq_ = fs::exists(
      root_ / "sys/devices/system/cpu" / ("cpu" + std::to_string(first)) / "cpufreq/scaling_cur_freq", ec);
}

HostReading HostReader::read(bool slow) const {
  HostReading r;
  auto mhz = cpufreq_ || slow ? read_cpu_mhz(root_, cpus_) : std::vector<double>{};
  if (!mhz.empty()) {
    std::sort(mhz.begin(), mhz.end());
    r.cpu_mhz_min = mhz.front();
    r.cpu_mhz_max = mhz.back();
    const std::size_t n = mhz.size();
    r.cpu_mhz_median = n % 2 ? mhz[n / 2] : (mhz[n / 2 - 1] + mhz[n / 2]) / 2;
  }
  if (const auto l = read_loadavg(root_)) r.load1 = l->load1;
  if (const auto m = read_meminfo(root_)) r.mem_available_bytes = static_cast<double>(m->available_bytes);
  for (const auto& z : read_thermal_zones(root_))
    r.temperature_c = std::max(r.temperature_c.value_or(z.celsius), z.celsius);
  return r;
}

}  // namespace fb::host
