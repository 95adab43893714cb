#include "kernels/host/gemm_reference.hpp"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"

namespace fb::kernels {

std::vector<GemmSample> gemm_sample_positions(const GemmProblem& p, std::size_t count, std::uint64_t seed) {
  std::vector<GemmSample> out;
  out.push_back({0, 0, 0});
  if (count > 1) out.push_back({p.m - 1, p.n - 1, p.batch - 1});
  SplitMix64 rng(seed);
  while (out.size() < count) {
    const auto pick = [&](std::int64_t n) {
      return static_cast<std::int64_t>(rng.uniform() * static_cast<double>(n));
    };
    out.push_back({pick(p.m), pick(p.n), pick(p.batch)});
  }
  return out;
}

std::size_t gemm_c_index(const GemmProblem& p, const GemmSample& s) {
  return static_cast<std::size_t>(s.batch * p.batch_stride_c() + s.i + s.j * p.ld_c());
}

double element_as_double(const void* base, DType type, std::size_t index) {
  switch (type) {
    case DType::fp64:
      return static_cast<const double*>(base)[index];
    case DType::fp32:
    case DType::tf32:
      return static_cast<const float*>(base)[index];
    case DType::fp16:
      return fp16_to_float(static_cast<const std::uint16_t*>(base)[index]);
    case DType::bf16:
      return bf16_to_float(static_cast<const std::uint16_t*>(base)[index]);
    case DType::fp8_e4m3:
      return fp8_e4m3_to_float(static_cast<const std::uint8_t*>(base)[index]);
    case DType::fp8_e5m2:
      return fp8_e5m2_to_float(static_cast<const std::uint8_t*>(base)[index]);
    default:
      throw runtime_error("GEMM reference: no conversion for " + std::string(to_string(type)));
  }
}

double gemm_tolerance(DType dtype) {
  switch (dtype) {
    case DType::fp64:
      return 1e-12;
    case DType::fp32:
      return 1e-5;
    case DType::tf32:
      return 2e-3;  // inputs rounded to 10 mantissa bits: ≤ 2^-10 per product before cancellation
    case DType::fp16:
      return 5e-3;  // output rounded to 11 bits (2^-11) plus fp32 accumulation
    case DType::bf16:
      return 1e-2;  // output rounded to 8 bits (2^-9)
    default:
      return 2e-2;  // fp8 inputs are exact; bf16 output and Hopper's fp8 accumulator precision
  }
}

GemmCheck check_gemm_samples(const GemmProblem& p, const void* a, const void* b,
                             std::span<const GemmSample> samples, std::span<const double> c_values) {
  if (samples.size() != c_values.size()) throw runtime_error("GEMM check: one value per sample required");
  if (p.beta != 0.0) throw runtime_error("GEMM check: beta must be 0");
  const GemmTypes t = gemm_types(p.dtype);
  const double tol = gemm_tolerance(p.dtype);
  GemmCheck check;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    const GemmSample& at = samples[s];
    double sum = 0, abs_sum = 0;
    for (std::int64_t l = 0; l < p.k; ++l) {
      // op(A)(i, l) and op(B)(l, j) in column-major storage.
      const std::int64_t ia =
          at.batch * p.batch_stride_a() + (p.transa ? l + at.i * p.ld_a() : at.i + l * p.ld_a());
      const std::int64_t ib =
          at.batch * p.batch_stride_b() + (p.transb ? at.j + l * p.ld_b() : l + at.j * p.ld_b());
      const double prod = element_as_double(a, t.a, static_cast<std::size_t>(ia)) *
                          element_as_double(b, t.b, static_cast<std::size_t>(ib));
      sum += prod;
      abs_sum += std::fabs(prod);
    }
    const double expected = p.alpha * sum;
    // The smallest normal of the output type keeps an all-tiny dot product from demanding exactness.
    const double allowed = tol * std::fabs(p.alpha) * abs_sum + 1e-30;
    const double err = std::fabs(c_values[s] - expected);
    const double ratio = std::isnan(err) ? INFINITY : err / allowed;
    ++check.checked;
    if (ratio > check.worst) check.worst = ratio;
    if (!(ratio <= 1.0)) {
      if (check.mismatches == 0)
        check.detail = fmt::format("C({},{}) batch {}: got {:.7g}, expected {:.7g} (allowed ±{:.3g})", at.i,
                                   at.j, at.batch, c_values[s], expected, allowed);
      ++check.mismatches;
    }
  }
  return check;
}

}  // namespace fb::kernels
