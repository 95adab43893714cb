#include "kernels/device_probe.hpp"

#include "kernels/host/fma_peak.hpp"
#include "kernels/host/openblas_info.hpp"

namespace fb::kernels {

std::optional<PeakProbe> device_peak_probe(const Backend& backend) {
  if (backend.defaults().peak_from_table) return std::nullopt;
  const CorePeak p = measure_core_peak();
  return PeakProbe{p.fp32_gflops, p.fp64_gflops, p.isa};
}

std::string blas_library_info() {
  return openblas_version();
}

}  // namespace fb::kernels
