#pragma once
// Measured floating-point peak of one CPU core: independent chains of fused multiply-adds that never touch
// memory, so the figure is the core's arithmetic ceiling at its current clock (the host backend's "peak").

namespace fb::kernels {

struct CorePeak {
  double fp32_gflops = 0;  // one core, one thread
  double fp64_gflops = 0;
  const char* isa = "";  // "avx512f", "avx2+fma" or "scalar"
};

// Runs for about `seconds` per dtype and keeps the best of several repetitions.
CorePeak measure_core_peak(double seconds = 0.05);

}  // namespace fb::kernels
