#include "core/backend.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/host_backend.hpp"
#include "core/logging.hpp"
#include "core/random_fill.hpp"
#ifdef FB_HAVE_CUDA
#include "core/cuda_backend.hpp"
#endif

namespace fb {

std::string_view to_string(BackendKind kind) {
  return kind == BackendKind::cuda ? "cuda" : "host";
}

BackendChoice parse_backend_choice(std::string_view text) {
  if (text == "auto") return BackendChoice::automatic;
  if (text == "host") return BackendChoice::host;
  if (text == "cuda") return BackendChoice::cuda;
  throw usage_error("invalid --backend '" + std::string(text) + "' (expected auto, cuda or host)");
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

void DeviceBuffer::release() {
  if (owner_ && data_) owner_->free(data_);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

void Backend::fill_random(DeviceBuffer& buffer, DType type, std::uint64_t seed, double lo, double hi) {
  const std::size_t elem = dtype_bytes(type);
  const std::size_t count = buffer.bytes() / elem;
  // Chunks keep host memory bounded for multi-GiB device buffers; each chunk has its own derived seed.
  constexpr std::size_t kChunkElems = std::size_t{1} << 22;
  std::vector<unsigned char> staging(std::min(count, kChunkElems) * elem);
  for (std::size_t first = 0, chunk = 0; first < count; first += kChunkElems, ++chunk) {
    const std::size_t n = std::min(kChunkElems, count - first);
    fill_random_host(staging.data(), n, type, derive_seed(seed, chunk), lo, hi);
    copy_to_device(buffer, staging.data(), n * elem, first * elem);
  }
}

bool cuda_compiled_in() {
#ifdef FB_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Backend> make_backend(BackendChoice choice, int local_rank, int local_size) {
  if (choice == BackendChoice::host) return std::make_unique<HostBackend>(local_size);
#ifdef FB_HAVE_CUDA
  std::string reason;
  if (cuda_backend_available(reason)) return make_cuda_backend(local_rank);
  if (choice == BackendChoice::cuda) throw unsupported_error("--backend cuda: " + reason);
  log::info("no usable GPU ({}); using the host backend", reason);
#else
  (void)local_rank;
  if (choice == BackendChoice::cuda)
    throw unsupported_error("--backend cuda: this build has no cuda backend (built without nvcc)");
#endif
  return std::make_unique<HostBackend>(local_size);
}

}  // namespace fb
