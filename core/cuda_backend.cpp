#include "core/cuda_backend.hpp"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace fb {
namespace {

class CudaEventTimer final : public Timer {
 public:
  explicit CudaEventTimer(cudaStream_t stream) : stream_(stream) {
    FB_CHECK_CUDA(cudaEventCreate(&begin_));
    FB_CHECK_CUDA(cudaEventCreate(&end_));
  }
  ~CudaEventTimer() override {
    cudaEventDestroy(begin_);
    cudaEventDestroy(end_);
  }
  void start() override { FB_CHECK_CUDA(cudaEventRecord(begin_, stream_)); }
  void stop() override { FB_CHECK_CUDA(cudaEventRecord(end_, stream_)); }
  double seconds() override {
    FB_CHECK_CUDA(cudaEventSynchronize(end_));
    float ms = 0;
    FB_CHECK_CUDA(cudaEventElapsedTime(&ms, begin_, end_));
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t begin_{}, end_{};
};

// cuBLASLt wants 32 MiB of workspace on Hopper; 128 MiB of cache covers the L2 of H100/H200 (50 MB) and
// B200 (126 MB); 8192³ bf16 is where MAMF sweeps peak on H100/H200 (Bekman, ml-engineering).
BackendDefaults cuda_defaults() {
  BackendDefaults d;
  d.peak_from_table = true;
  d.gemm = {
      DType::bf16, 8192, {2048, 4096, 6144, 8192}, true, std::uint64_t{32} << 20, std::uint64_t{128} << 20};
  d.collective = {3};
  d.health = {8192, 5, 20, std::uint64_t{256} << 20, std::uint64_t{256} << 20};
  return d;
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    FB_CHECK_CUDA(cudaSetDevice(device_));
    FB_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cudaDeviceProp prop{};
    FB_CHECK_CUDA(cudaGetDeviceProperties(&prop, device_));
    info_.kind = "gpu";
    info_.name = prop.name;
    info_.index = device_;
    info_.multiprocessors = prop.multiProcessorCount;
    info_.memory_bytes = prop.totalGlobalMem;
    info_.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
    int clock_khz = 0, mem_khz = 0;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device_);
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device_);
    info_.clock_mhz = clock_khz / 1000;
    info_.memory_clock_mhz = mem_khz / 1000;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof(bus), device_) == cudaSuccess) info_.pci_bus_id = bus;
    std::string uuid = "GPU-";
    for (int i = 0; i < 16; ++i) {
      uuid += fmt::format("{:02x}", static_cast<unsigned char>(prop.uuid.bytes[i]));
      if (i == 3 || i == 5 || i == 7 || i == 9) uuid += '-';
    }
    info_.uuid = uuid;
  }
  ~CudaBackend() override { cudaStreamDestroy(stream_); }

  BackendKind kind() const override { return BackendKind::cuda; }
  DeviceInfo device() const override { return info_; }
  const BackendDefaults& defaults() const override { return defaults_; }
  std::uint64_t free_memory_bytes() const override {
    std::size_t free_b = 0, total = 0;
    FB_CHECK_CUDA(cudaMemGetInfo(&free_b, &total));
    return free_b;
  }
  DeviceBuffer allocate(std::size_t bytes) override {
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 1);
    if (rc != cudaSuccess)
      throw runtime_error(
          fmt::format("cannot allocate {} of GPU memory: {}", format_bytes(bytes), cudaGetErrorString(rc)));
    return DeviceBuffer(this, p, bytes);
  }
  void copy_to_device(DeviceBuffer& dst, const void* src, std::size_t bytes, std::size_t offset) override {
    FB_CHECK_CUDA(cudaMemcpyAsync(static_cast<char*>(dst.data()) + offset, src, bytes, cudaMemcpyHostToDevice,
                                  stream_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  void copy_to_host(void* dst, const DeviceBuffer& src, std::size_t bytes, std::size_t offset) override {
    FB_CHECK_CUDA(cudaMemcpyAsync(dst, static_cast<const char*>(src.data()) + offset, bytes,
                                  cudaMemcpyDeviceToHost, stream_));
    FB_CHECK_CUDA(cudaStreamSynchronize(stream_));
  }
  void copy_device_to_device(DeviceBuffer& dst, const DeviceBuffer& src, std::size_t bytes) override {
    FB_CHECK_CUDA(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void synchronize() override { FB_CHECK_CUDA(cudaStreamSynchronize(stream_)); }
  std::unique_ptr<Timer> make_timer() override { return std::make_unique<CudaEventTimer>(stream_); }
  void* native_stream() const override { return stream_; }

 protected:
  void free(void* data) noexcept override { cudaFree(data); }

 private:
  int device_;
  cudaStream_t stream_{};
  DeviceInfo info_;
  BackendDefaults defaults_ = cuda_defaults();
};

}  // namespace

bool cuda_backend_available(std::string& reason) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    reason = fmt::format("{}: {}", cudaGetErrorName(rc), cudaGetErrorString(rc));
    cudaGetLastError();  // clear the sticky error for later calls
    return false;
  }
  if (count == 0) {
    reason = "no CUDA device is visible";
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_cuda_backend(int local_rank) {
  int count = 0;
  FB_CHECK_CUDA(cudaGetDeviceCount(&count));
  return std::make_unique<CudaBackend>(local_rank % count);
}

}  // namespace fb
