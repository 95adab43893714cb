#pragma once
// Versions of the libraries this build uses, for --version and the report's fingerprint.
#include <string>

namespace fb {

struct LibraryVersions {
  std::string cuda_runtime;  // "13.0" (empty without CUDA)
  std::string cuda_driver;   // "13.0", or "none" when no driver is loaded
  std::string cublaslt;      // "13.1.0"
  std::string nccl;          // "2.28.9"
  // The cuDNN attention engine: "9.19.0 (frontend 1.32.0)", "off" (not built) or
  // "unavailable (frontend 1.32.0): <why libcudnn did not load>".
  std::string cudnn;
  std::string mpi;        // "Open MPI v4.1.4"
  std::string mpi_short;  // "Open MPI 4.1.4"
};

LibraryVersions library_versions();

}  // namespace fb
