#include "kernels/host/fma_peak.hpp"

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

// The chains are written in assembly so that the peak is the core's whatever the build: with intrinsics,
// clang -O1 kept them in memory (50 of 130 GFLOP/s fp32), ASan at -O1 read 18 and -O0 read 11, and the
// MFU measured against that peak came out 2.6-12x too high (above 1 in the sanitizer build's train tests).
// acc = acc * a + b from acc = 0 converges to b / (1 - a) = 0.1: no overflow, no denormals.
#define FB_FMA12(op)                                                       \
  op " %%ymm13, %%ymm12, %%ymm0\n\t" op " %%ymm13, %%ymm12, %%ymm1\n\t" op \
     " %%ymm13, %%ymm12, %%ymm2\n\t" op " %%ymm13, %%ymm12, %%ymm3\n\t" op \
     " %%ymm13, %%ymm12, %%ymm4\n\t" op " %%ymm13, %%ymm12, %%ymm5\n\t" op \
     " %%ymm13, %%ymm12, %%ymm6\n\t" op " %%ymm13, %%ymm12, %%ymm7\n\t" op \
     " %%ymm13, %%ymm12, %%ymm8\n\t" op " %%ymm13, %%ymm12, %%ymm9\n\t" op \
     " %%ymm13, %%ymm12, %%ymm10\n\t" op " %%ymm13, %%ymm12, %%ymm11\n\t"
#define FB_ZERO12                                                                                       \
  "vxorps %%ymm0, %%ymm0, %%ymm0\n\tvxorps %%ymm1, %%ymm1, %%ymm1\n\tvxorps %%ymm2, %%ymm2, %%ymm2\n\t" \
  "vxorps %%ymm3, %%ymm3, %%ymm3\n\tvxorps %%ymm4, %%ymm4, %%ymm4\n\tvxorps %%ymm5, %%ymm5, %%ymm5\n\t" \
  "vxorps %%ymm6, %%ymm6, %%ymm6\n\tvxorps %%ymm7, %%ymm7, %%ymm7\n\tvxorps %%ymm8, %%ymm8, %%ymm8\n\t" \
  "vxorps %%ymm9, %%ymm9, %%ymm9\n\tvxorps %%ymm10, %%ymm10, %%ymm10\n\tvxorps %%ymm11, %%ymm11, "      \
  "%%ymm11\n\t"
#define FB_YMM_CLOBBERS                                                                                      \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "cc"

// One timed call: kIters rounds of the 12 chains, vbroadcast `bcast` of a and b, `fma` on 8 floats or 4
// doubles.
#define FB_RUN_CHAINS(bcast, fma, a, b)                                            \
  do {                                                                             \
    std::int64_t n = kIters;                                                       \
    asm volatile(bcast " %[av], %%ymm12\n\t" bcast " %[bv], %%ymm13\n\t" FB_ZERO12 \
                       "1:\n\t" FB_FMA12(fma) "dec %[n]\n\tjnz 1b\n\tvzeroupper"   \
                 : [n] "+r"(n)                                                     \
                 : [av] "m"(a), [bv] "m"(b)                                        \
                 : FB_YMM_CLOBBERS);                                               \
  } while (0)

__attribute__((target("avx2,fma"))) void avx2_fp32_chains() {
  const float a = 0.999999f, b = 1e-7f;
  FB_RUN_CHAINS("vbroadcastss", "vfmadd213ps", a, b);
}

__attribute__((target("avx2,fma"))) void avx2_fp64_chains() {
  const double a = 0.999999, b = 1e-7;
  FB_RUN_CHAINS("vbroadcastsd", "vfmadd213pd", a, b);
}

#undef FB_RUN_CHAINS
#undef FB_FMA12
#undef FB_ZERO12
#undef FB_YMM_CLOBBERS

double avx2_fp32(double seconds) {
  return best_rate(seconds, 2.0 * 8 * kChains * kIters, [] { avx2_fp32_chains(); });
}

double avx2_fp64(double seconds) {
  return best_rate(seconds, 2.0 * 4 * kChains * kIters, [] { avx2_fp64_chains(); });
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
