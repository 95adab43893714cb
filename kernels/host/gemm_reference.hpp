#pragma once
// The fp64 reference a GEMM result is checked against: selected output elements recomputed on the host in
// double precision from the very inputs the engine read (host copies), with a per-dtype tolerance.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/gemm_engine.hpp"

namespace fb::kernels {

struct GemmSample {
  std::int64_t i = 0, j = 0, batch = 0;  // row, column, batch of C
};

// `count` seeded positions spread over C, always including the first (0,0,0) and last element.
std::vector<GemmSample> gemm_sample_positions(const GemmProblem& problem, std::size_t count,
                                              std::uint64_t seed);
// Index of the sample's element in C's buffer (elements, not bytes).
std::size_t gemm_c_index(const GemmProblem& problem, const GemmSample& s);

// Value of element `index` of a buffer of `type` (fp64, fp32/tf32, fp16, bf16, fp8_e4m3, fp8_e5m2).
double element_as_double(const void* base, DType type, std::size_t index);

// Allowed error of one output element, as a fraction of Σ|a·b| over its inner product: covers input
// rounding the engine may do (tf32), fp32 accumulation order and the rounding of C to its type.
// fp64 1e-12, fp32 1e-5, tf32 2e-3, fp16 5e-3, bf16 1e-2, fp8 2e-2.
double gemm_tolerance(DType dtype);

struct GemmCheck {
  std::size_t checked = 0;
  std::size_t mismatches = 0;
  double worst = 0;    // largest |error| / allowed over the samples (≤ 1 passes)
  std::string detail;  // the first mismatch, "C(3,7) batch 0: got 1.5 expected 2.25 (allowed ±0.001)"
  bool ok() const { return mismatches == 0; }
};

// `a`, `b`: host copies of the whole A and B buffers (types from gemm_types(problem.dtype)); `c_values`: the
// engine's outputs at `samples`, in order. Scales are taken as 1 and beta as 0 (what the benchmark runs).
GemmCheck check_gemm_samples(const GemmProblem& problem, const void* a, const void* b,
                             std::span<const GemmSample> samples, std::span<const double> c_values);

}  // namespace fb::kernels
