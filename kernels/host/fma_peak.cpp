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
// One round of the 12 chains on vector registers `r` (ymm or zmm): r0..r11 = r0..r11 * r12 + r13.
#define FB_FMA12(op, r)                                                                                      \
  op " %%" r "13, %%" r "12, %%" r "0\n\t" op " %%" r "13, %%" r "12, %%" r "1\n\t" op " %%" r "13, %%" r    \
     "12, %%" r "2\n\t" op " %%" r "13, %%" r "12, %%" r "3\n\t" op " %%" r "13, %%" r "12, %%" r "4\n\t" op \
     " %%" r "13, %%" r "12, %%" r "5\n\t" op " %%" r "13, %%" r "12, %%" r "6\n\t" op " %%" r "13, %%" r    \
     "12, %%" r "7\n\t" op " %%" r "13, %%" r "12, %%" r "8\n\t" op " %%" r "13, %%" r "12, %%" r "9\n\t" op \
     " %%" r "13, %%" r "12, %%" r "10\n\t" op " %%" r "13, %%" r "12, %%" r "11\n\t"
// Zeroing the xmm part zeroes the whole ymm or zmm register (VEX/EVEX encodings clear the upper bits).
#define FB_ZERO12                                                                                       \
  "vxorps %%xmm0, %%xmm0, %%xmm0\n\tvxorps %%xmm1, %%xmm1, %%xmm1\n\tvxorps %%xmm2, %%xmm2, %%xmm2\n\t" \
  "vxorps %%xmm3, %%xmm3, %%xmm3\n\tvxorps %%xmm4, %%xmm4, %%xmm4\n\tvxorps %%xmm5, %%xmm5, %%xmm5\n\t" \
  "vxorps %%xmm6, %%xmm6, %%xmm6\n\tvxorps %%xmm7, %%xmm7, %%xmm7\n\tvxorps %%xmm8, %%xmm8, %%xmm8\n\t" \
  "vxorps %%xmm9, %%xmm9, %%xmm9\n\tvxorps %%xmm10, %%xmm10, %%xmm10\n\tvxorps %%xmm11, %%xmm11, "      \
  "%%xmm11\n\t"
#define FB_VEC_CLOBBERS                                                                                      \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "cc"

// One timed call: kIters rounds of the 12 chains, vbroadcast `bcast` of a and b into register kind `r`,
// `fma` on a full register (8 or 16 floats, 4 or 8 doubles).
#define FB_RUN_CHAINS(bcast, fma, r, a, b)                                             \
  do {                                                                                 \
    std::int64_t n = kIters;                                                           \
    asm volatile(bcast " %[av], %%" r "12\n\t" bcast " %[bv], %%" r "13\n\t" FB_ZERO12 \
                       "1:\n\t" FB_FMA12(fma, r) "dec %[n]\n\tjnz 1b\n\tvzeroupper"    \
                 : [n] "+r"(n)                                                         \
                 : [av] "m"(a), [bv] "m"(b)                                            \
                 : FB_VEC_CLOBBERS);                                                   \
  } while (0)

__attribute__((target("avx2,fma"))) void avx2_fp32_chains() {
  const float a = 0.999999f, b = 1e-7f;
  FB_RUN_CHAINS("vbroadcastss", "vfmadd213ps", "ymm", a, b);
}

__attribute__((target("avx2,fma"))) void avx2_fp64_chains() {
  const double a = 0.999999, b = 1e-7;
  FB_RUN_CHAINS("vbroadcastsd", "vfmadd213pd", "ymm", a, b);
}

// OpenBLAS runs its AVX-512 kernels (SkylakeX, Cooper Lake, Sapphire Rapids, Zen 4) where the CPU has them:
// measured against the AVX2 peak, its GEMM read 130% MFU on a core with two 512-bit FMA units. The wider
// peak is measured as run (a core with one 512-bit unit, or a lower AVX-512 clock, reads what it gives).
__attribute__((target("avx512f"))) void avx512_fp32_chains() {
  const float a = 0.999999f, b = 1e-7f;
  FB_RUN_CHAINS("vbroadcastss", "vfmadd213ps", "zmm", a, b);
}

__attribute__((target("avx512f"))) void avx512_fp64_chains() {
  const double a = 0.999999, b = 1e-7;
  FB_RUN_CHAINS("vbroadcastsd", "vfmadd213pd", "zmm", a, b);
}

#undef FB_RUN_CHAINS
#undef FB_FMA12
#undef FB_ZERO12
#undef FB_VEC_CLOBBERS

double avx2_fp32(double seconds) {
  return best_rate(seconds, 2.0 * 8 * kChains * kIters, [] { avx2_fp32_chains(); });
}

double avx2_fp64(double seconds) {
  return best_rate(seconds, 2.0 * 4 * kChains * kIters, [] { avx2_fp64_chains(); });
}

double avx512_fp32(double seconds) {
  return best_rate(seconds, 2.0 * 16 * kChains * kIters, [] { avx512_fp32_chains(); });
}

double avx512_fp64(double seconds) {
  return best_rate(seconds, 2.0 * 8 * kChains * kIters, [] { avx512_fp64_chains(); });
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
    if (__builtin_cpu_supports("avx512f")) {  // the wider of the two, as the BLAS would pick it
      const double fp32 = avx512_fp32(seconds), fp64 = avx512_fp64(seconds);
      if (fp32 > p.fp32_gflops) {
        p.isa = "avx512f";
        p.fp32_gflops = fp32;
        p.fp64_gflops = std::max(p.fp64_gflops, fp64);
      }
    }
  } else {
    p.isa = "scalar";
    p.fp32_gflops = scalar_peak<float>(seconds);
    p.fp64_gflops = scalar_peak<double>(seconds);
  }
  return p;
}

}  // namespace fb::kernels
