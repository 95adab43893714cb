#pragma once
// GEMM arithmetic: FLOP count, throughput and MFU, and the slow-rank detector. Pure functions
// (docs/metrics.md).
#include <cstdint>
#include <span>
#include <vector>

namespace fb::workloads {

// 2·M·N·K·batch: one multiply and one add per inner-product term (the convention of cuBLAS, MAMF and
// Megatron-LM; alpha/beta scaling is not counted).
double gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch = 1);

// FLOP/s in TFLOP/s (10^12) for `flops` done in `seconds` (> 0).
double tflops(double flops, double seconds);

// Model FLOPs utilisation: achieved / peak, as a fraction (not clamped: a value above 1 means the peak is
// wrong). Throws a runtime Error when peak_tflops ≤ 0.
double mfu(double achieved_tflops, double peak_tflops);

// Median of the per-rank figures (mean of the middle two for an even count).
double median_of(std::span<const double> values);

// The slow-GPU detector: ranks whose throughput is below median · (1 − threshold), in rank order.
// threshold is a fraction (0.05 = 5%).
std::vector<int> slow_ranks(std::span<const double> per_rank_tflops, double threshold);

}  // namespace fb::workloads
