#pragma once
// Facts about the compute device that only running a kernel or asking its library tells, behind the
// backend seam so workloads never reach into kernels/host or kernels/cuda.
#include <optional>
#include <string>

#include "core/backend.hpp"

namespace fb::kernels {

struct PeakProbe {
  double fp32_gflops = 0;  // one compute unit (a CPU core), one thread
  double fp64_gflops = 0;
  std::string isa;  // "avx2+fma", "scalar"
};

// The arithmetic ceiling of one compute unit, measured: on host one core's FMA peak (kernels/host/fma_peak);
// nullopt on cuda, whose peaks come from the hardware table (BackendDefaults::peak_from_table).
std::optional<PeakProbe> device_peak_probe(const Backend& backend);

// The BLAS library the host engines link, "OpenBLAS 0.3.21" (recorded in every report's system block).
std::string blas_library_info();

}  // namespace fb::kernels
