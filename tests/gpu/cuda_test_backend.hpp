#pragma once
// What every GPU-labelled test starts with: the cuda backend on a world of one process, or the reason there
// is none (built without CUDA, no driver, no device), for GTEST_SKIP.
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
    reason = e.what();
    return nullptr;
  }
}

}  // namespace fb::gpu_test
