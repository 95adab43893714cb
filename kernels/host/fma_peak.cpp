#include "kernels/host/fma_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace fb::kernels {
namespace {

// 12 independent accumulators hide the FMA latency (4-5 cycles) on two FMA ports.
constexpr int kChains = 12;

template <typename Body>
double best_rate(double seconds, double flops_per_call, Body body) {
  double best = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  do {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (dt > 0) best = std::max(best, flops_per_call / dt);
  } while (std::chrono::steady_clock::now() < deadline);
  return best / 1e9;
}

constexpr std::int64_t kIters = 200000;

__attribute__((target("avx2,fma"))) float avx2_fp32_chains() {
  __m256 acc[kChains];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c + 1));
  for (std::int64_t i = 0; i < kIters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  return _mm256_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) double avx2_fp64_chains() {
  __m256d acc[kChains];
  const __m256d a = _mm256_set1_pd(0.999999), b = _mm256_set1_pd(1e-7);
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_pd(c + 1.0);
  for (std::int64_t i = 0; i < kIters; ++i)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_pd(acc[c], a, b);
  __m256d s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_pd(s, acc[c]);
  return _mm256_cvtsd_f64(s);
}

double avx2_fp32(double seconds) {
  volatile float sink = 0;
  return best_rate(seconds, 2.0 * 8 * kChains * kIters, [&] { sink = sink + avx2_fp32_chains(); });
}

double avx2_fp64(double seconds) {
  volatile double sink = 0;
  return best_rate(seconds, 2.0 * 4 * kChains * kIters, [&] { sink = sink + avx2_fp64_chains(); });
}

template <typename T>
double scalar_peak(double seconds) {
  volatile T sink = 0;
  return best_rate(seconds, 2.0 * kChains * kIters, [&] {
    T acc[kChains];
    for (int c = 0; c < kChains; ++c) acc[c] = static_cast<T>(c + 1);
    for (std::int64_t i = 0; i < kIters; ++i)
      for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * static_cast<T>(0.999999) + static_cast<T>(1e-7);
    T s = 0;
    for (int c = 0; c < kChains; ++c) s += acc[c];
    sink = sink + s;
  });
}

}  // namespace

CorePeak measure_core_peak(double seconds) {
  CorePeak p;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    p.isa = "avx2+fma";
    p.fp32_gflops = avx2_fp32(seconds);
    p.fp64_gflops = avx2_fp64(seconds);
  } else {
    p.isa = "scalar";
    p.fp32_gflops = scalar_peak<float>(seconds);
    p.fp64_gflops = scalar_peak<double>(seconds);
  }
  return p;
}

}  // namespace fb::kernels
