#include "core/library_versions.hpp"

#include <mpi.h>

#include <fmt/format.h>

#include "core/cudnn_library.hpp"
#include "core/mpi_context.hpp"
#ifdef FB_HAVE_CUDA
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif
#ifdef FB_HAVE_CUDNN
#include <cudnn_frontend_version.h>
#endif

namespace fb {

LibraryVersions library_versions() {
  LibraryVersions v;
#ifdef FB_HAVE_CUDA
  int runtime = 0, driver = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    v.cuda_runtime = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0)
    v.cuda_driver = fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
  else
    v.cuda_driver = "none";
  const std::size_t lt = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  v.cublaslt = fmt::format("{}.{}.{}", lt / 10000, (lt / 100) % 100, lt % 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess)
    v.nccl = fmt::format("{}.{}.{}", nccl / 10000, (nccl / 100) % 100, nccl % 100);
#endif
#ifdef FB_HAVE_CUDNN
  const std::string frontend = fmt::format("frontend {}.{}.{}", CUDNN_FRONTEND_MAJOR_VERSION,
                                           CUDNN_FRONTEND_MINOR_VERSION, CUDNN_FRONTEND_PATCH_VERSION);
  const auto& cudnn = cudnn_library();
  v.cudnn = cudnn.handle ? fmt::format("{} ({})", cudnn.version, frontend)
                         : fmt::format("unavailable ({}): {}", frontend, cudnn.error);
#else
  v.cudnn = "off";
#endif
  v.mpi = mpi_library_version();
#if defined(OMPI_MAJOR_VERSION)
  v.mpi_short =
      fmt::format("Open MPI {}.{}.{}", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION);
#else
  v.mpi_short = v.mpi;
#endif
  return v;
}

}  // namespace fb
