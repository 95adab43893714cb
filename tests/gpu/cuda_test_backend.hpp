#pragma once
// What every GPU-labelled test starts with: the cuda backend on a world of one process, or the reason there
// is none (built without CUDA, no driver, no device), for GTEST_SKIP; any other error fails the test.
#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "core/mpi_context.hpp"

namespace fb::gpu_test {

inline MpiContext& test_mpi() {
  static MpiContext context(nullptr, nullptr);  // singleton MPI: a world of one process
  return context;
}

inline std::unique_ptr<Backend> cuda_backend(std::string& reason) {
  if (!cuda_compiled_in()) {
    reason = "built without CUDA";
    return nullptr;
  }
  try {
    return make_backend(BackendChoice::cuda, test_mpi().local_rank(), test_mpi().local_size());
  } catch (const Error& e) {
    // Only "no usable GPU" (no driver, no device: make_backend's unsupported error) is a skip. A backend that
    // fails to start on a GPU (cuBLASLt, a stream, memory) is a failure: it propagates and fails the test.
    if (e.kind() != ErrorKind::unsupported) throw;
    reason = e.what();
    return nullptr;
  }
}

}  // namespace fb::gpu_test
