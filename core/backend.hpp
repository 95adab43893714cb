#pragma once
// The seam between workloads and hardware: memory, copies, random fill, timers and device facts.
// Two implementations, chosen at run time: cuda (CUDA runtime, events, one device per local rank) and host
// (aligned host memory, steady clock). Workload code never includes CUDA headers.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"

namespace fb {

enum class BackendKind { host, cuda };
enum class BackendChoice { automatic, host, cuda };

std::string_view to_string(BackendKind kind);
BackendChoice parse_backend_choice(std::string_view text);  // auto|host|cuda; usage Error otherwise

struct DeviceInfo {
  std::string kind;                // "gpu" or "cpu"
  std::string name;                // "NVIDIA H200", or the CPU model
  int index = 0;                   // device ordinal used by this rank
  int multiprocessors = 0;         // SMs (gpu) or cores available to this rank (cpu)
  std::uint64_t memory_bytes = 0;  // device memory (gpu) or this rank's share of host memory (cpu)
  std::string compute_capability;  // "9.0" (gpu)
  int clock_mhz = 0;               // max SM clock
  int memory_clock_mhz = 0;
  std::string uuid;
  std::string pci_bus_id;
};

// What differs between backends for the workloads that run on them, so callers ask the backend instead of
// testing its kind. The values are the documented defaults (docs/gemm.md, docs/collective.md,
// docs/health.md).
struct BackendDefaults {
  // Peaks (and MFU's denominator) come from the hardware table (GPUs) or are measured (host).
  bool peak_from_table = false;
  struct Gemm {
    DType dtype;                           // bf16 on GPUs (tensor cores), fp32 on the host
    std::int64_t dim;                      // m = n = k when none is given
    std::vector<std::int64_t> sweep_dims;  // the MAMF-style sweep's dims (each of m, n, k)
    bool autotunes;                        // the engine times heuristic candidates (cuBLASLt)
    std::uint64_t workspace_bytes;         // engine workspace beside the operands
    std::uint64_t cache_bytes;             // the last-level cache input rotation must defeat
  } gemm;
  struct Collective {
    int inplace_buffers;  // buffers of the largest size when also measuring in place (NCCL stages a third)
  } collective;
  struct Health {
    std::int64_t gemm_dim;
    int gemm_warmup, gemm_iters;
    std::uint64_t allreduce_bytes, checkpoint_bytes;
  } health;
};

class Backend;

// Device (or host) memory owned by a backend. Move-only; freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend* owner, void* data, std::size_t bytes) : owner_(owner), data_(data), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void release();
  Backend* owner_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Measures elapsed time of work issued between start() and stop() on the backend's stream.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  // Waits for the stopped work and returns its duration in seconds.
  virtual double seconds() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual DeviceInfo device() const = 0;
  virtual const BackendDefaults& defaults() const = 0;
  // Bytes that may still be allocated (device memory, or available host memory).
  virtual std::uint64_t free_memory_bytes() const = 0;

  virtual DeviceBuffer allocate(std::size_t bytes) = 0;
  virtual void copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes,
                              std::size_t offset = 0) = 0;
  virtual void copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes,
                            std::size_t offset = 0) = 0;
  virtual void copy_device_to_device(DeviceBuffer& dst, const DeviceBuffer& src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  virtual std::unique_ptr<Timer> make_timer() = 0;
  // The native stream (cudaStream_t) for engines of the same backend; nullptr on host.
  virtual void* native_stream() const { return nullptr; }

  // Seeded random values (never zero) in ±[lo, hi], generated on the host so both backends see the same
  // data for the same seed.
  void fill_random(DeviceBuffer& buffer, DType type, std::uint64_t seed, double lo = 0.0625, double hi = 1.0);

 protected:
  friend class DeviceBuffer;
  virtual void free(void* data) noexcept = 0;
};

// The cuda backend when chosen (or when `automatic` and a GPU is visible), else host. `automatic` falls
// back to host with a one-line notice when CUDA is compiled in but no driver or device is usable;
// `cuda` fails with the driver's reason. `local_rank` picks the device.
std::unique_ptr<Backend> make_backend(BackendChoice choice, int local_rank, int local_size);

// True when this build contains the cuda backend.
bool cuda_compiled_in();

}  // namespace fb
