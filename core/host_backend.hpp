#pragma once
// The host backend: 64-byte-aligned host memory, std::chrono::steady_clock timing, the CPU as the device.
#include "core/backend.hpp"

namespace fb {

class HostBackend final : public Backend {
 public:
  explicit HostBackend(int local_size = 1);
  BackendKind kind() const override { return BackendKind::host; }
  DeviceInfo device() const override { return info_; }
  const BackendDefaults& defaults() const override { return defaults_; }
  std::uint64_t free_memory_bytes() const override;
  DeviceBuffer allocate(std::size_t bytes) override;
  void copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes, std::size_t offset) override;
  void copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes, std::size_t offset) override;
  void copy_device_to_device(DeviceBuffer& dst, const DeviceBuffer& src, std::size_t bytes) override;
  void synchronize() override {}
  std::unique_ptr<Timer> make_timer() override;

 protected:
  void free(void* data) noexcept override;

 private:
  int local_size_;
  DeviceInfo info_;
  BackendDefaults defaults_;
};

// The largest cache in /sys/devices/system/cpu/cpu0/cache; 32 MiB when sysfs is unreadable (containers).
std::uint64_t host_last_level_cache_bytes();

}  // namespace fb
