#include "core/host_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "core/error.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"

namespace fb {
namespace {

class SteadyTimer final : public Timer {
 public:
  void start() override { begin_ = std::chrono::steady_clock::now(); }
  void stop() override { end_ = std::chrono::steady_clock::now(); }
  double seconds() override { return std::chrono::duration<double>(end_ - begin_).count(); }

 private:
  std::chrono::steady_clock::time_point begin_{}, end_{};
};

void check_range(const DeviceBuffer& buf, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > buf.bytes() || offset + bytes < offset)
    throw runtime_error("copy of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                        " overruns a buffer of " + std::to_string(buf.bytes()) + " bytes");
}

// Sized for seconds on two cores: OpenBLAS on one core reaches ~0.1 TFLOP/s.
BackendDefaults host_defaults() {
  BackendDefaults d;
  d.gemm = {DType::fp32, 1024, {256, 512, 768}, false, 0, host_last_level_cache_bytes()};
  d.collective = {2};
  d.health = {768, 1, 10, std::uint64_t{4} << 20, std::uint64_t{32} << 20};
  return d;
}

}  // namespace

std::uint64_t host_last_level_cache_bytes() {
  std::uint64_t largest = 0;
  std::error_code ec;
  const std::filesystem::path dir = "/sys/devices/system/cpu/cpu0/cache";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    std::ifstream in(entry.path() / "size");
    std::string text;
    if (!(in >> text)) continue;
    try {
      largest = std::max(largest, parse_size(text, "cache size"));  // "32768K"
    } catch (const Error&) {
    }
  }
  return largest ? largest : std::uint64_t{32} << 20;
}

HostBackend::HostBackend(int local_size) : local_size_(local_size < 1 ? 1 : local_size) {
  const HostInfo host = read_host_info();
  info_.kind = "cpu";
  info_.name = host.cpu_model;
  info_.index = 0;
  info_.multiprocessors = host.cores_available;
  info_.memory_bytes = host.memory_bytes / static_cast<std::uint64_t>(local_size_);
  info_.clock_mhz = host.cpu_max_mhz;
  defaults_ = host_defaults();
}

std::uint64_t HostBackend::free_memory_bytes() const {
  return host_memory_available_per_rank(local_size_);
}

DeviceBuffer HostBackend::allocate(std::size_t bytes) {
  const std::size_t rounded = ((bytes ? bytes : 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw runtime_error("cannot allocate " + format_bytes(bytes) + " of host memory");
  return DeviceBuffer(this, p, bytes);
}

void HostBackend::free(void* data) noexcept {
  std::free(data);
}

void HostBackend::copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes, std::size_t offset) {
  check_range(dst, bytes, offset);
  std::memcpy(static_cast<char*>(dst.data()) + offset, src, bytes);
}

void HostBackend::copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes, std::size_t offset) {
  check_range(src, bytes, offset);
  std::memcpy(dst, static_cast<const char*>(src.data()) + offset, bytes);
}

void HostBackend::copy_device_to_device(DeviceBuffer& dst, const DeviceBuffer& src, std::size_t bytes) {
  check_range(dst, bytes, 0);
  check_range(src, bytes, 0);
  std::memcpy(dst.data(), src.data(), bytes);
}

std::unique_ptr<Timer> HostBackend::make_timer() {
  return std::make_unique<SteadyTimer>();
}

}  // namespace fb
