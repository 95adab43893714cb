#include "kernels/host/gemm_openblas.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"

namespace fb::kernels {
namespace {

// cblas_sbgemm's signature (cblas-openblas.h), resolved at run time so one binary works with either build.
using SbgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                          const std::uint16_t*, blasint, const std::uint16_t*, blasint, float, float*,
                          blasint);

SbgemmFn find_sbgemm() {
  static const SbgemmFn fn = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return fn;
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

// OpenBLAS takes 32-bit dimensions in this (LP64) build: say so instead of overflowing.
blasint as_blasint(std::int64_t v, const char* what) {
  if (v > std::numeric_limits<blasint>::max())
    throw unsupported_error(std::string("GEMM ") + what + " = " + std::to_string(v) +
                            " exceeds OpenBLAS's 32-bit index range");
  return static_cast<blasint>(v);
}

struct BlasShape {
  CBLAS_TRANSPOSE ta, tb;
  blasint m, n, k, lda, ldb, ldc;
};

BlasShape blas_shape(const GemmProblem& p) {
  return {p.transa ? CblasTrans : CblasNoTrans,
          p.transb ? CblasTrans : CblasNoTrans,
          as_blasint(p.m, "m"),
          as_blasint(p.n, "n"),
          as_blasint(p.k, "k"),
          as_blasint(p.ld_a(), "lda"),
          as_blasint(p.ld_b(), "ldb"),
          as_blasint(p.ld_c(), "ldc")};
}

// bf16 → fp32 is exact: the bf16 bits are the high half of the float. Only the rows × cols a column-major
// matrix with leading dimension ld uses are read: a matrix may be a column block of a wider buffer (attention
// heads side by side in a token row), whose last column ends before ld does.
void widen_bf16(const std::uint16_t* in, float* out, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  for (std::int64_t j = 0; j < cols; ++j)
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::uint32_t bits = std::uint32_t{in[i + j * ld]} << 16;
      std::memcpy(&out[i + j * ld], &bits, sizeof(float));
    }
}

class OpenBlasEngine final : public GemmEngine {
 public:
  OpenBlasEngine(DType dtype, const GemmEngineOptions& options) : dtype_(dtype) {
    // OpenBLAS reads $OPENBLAS_NUM_THREADS at load time; otherwise keep ranks on one node from
    // oversubscribing the cores (each rank would start one thread per core).
    if (!std::getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(openblas_threads_for(options));
    if (dtype_ == DType::bf16) sbgemm_ = find_sbgemm();
  }

  std::string name() const override {
    switch (dtype_) {
      case DType::fp64:
        return "openblas cblas_dgemm";
      case DType::bf16:
        return sbgemm_ ? "openblas cblas_sbgemm" : "openblas cblas_sgemm (bf16 emulated)";
      default:
        return "openblas cblas_sgemm";
    }
  }
  DType dtype() const override { return dtype_; }
  bool emulated() const override { return dtype_ == DType::bf16 && !sbgemm_; }

  GemmPlanInfo prepare(const GemmProblem& problem, const void*, const void*, void*,
                       const GemmScales&) override {
    check(problem);
    GemmPlanInfo info;
    info.algo = name();
    info.candidates = 1;
    return info;
  }

  void run(const GemmProblem& p, const void* a, const void* b, void* c, const GemmScales&) override {
    check(p);
    const BlasShape s = blas_shape(p);
    for (std::int64_t i = 0; i < p.batch; ++i) {
      const std::int64_t oa = i * p.batch_stride_a(), ob = i * p.batch_stride_b(),
                         oc = i * p.batch_stride_c();
      switch (dtype_) {
        case DType::fp64:
          cblas_dgemm(CblasColMajor, s.ta, s.tb, s.m, s.n, s.k, p.alpha, static_cast<const double*>(a) + oa,
                      s.lda, static_cast<const double*>(b) + ob, s.ldb, p.beta, static_cast<double*>(c) + oc,
                      s.ldc);
          break;
        case DType::fp32:
          cblas_sgemm(CblasColMajor, s.ta, s.tb, s.m, s.n, s.k, static_cast<float>(p.alpha),
                      static_cast<const float*>(a) + oa, s.lda, static_cast<const float*>(b) + ob, s.ldb,
                      static_cast<float>(p.beta), static_cast<float*>(c) + oc, s.ldc);
          break;
        default:
          run_bf16(p, s, static_cast<const std::uint16_t*>(a) + oa, static_cast<const std::uint16_t*>(b) + ob,
                   static_cast<std::uint16_t*>(c) + oc);
      }
    }
  }

 private:
  void check(const GemmProblem& p) const {
    if (p.dtype != dtype_)
      throw runtime_error("GEMM engine for " + std::string(to_string(dtype_)) + " given a " +
                          std::string(to_string(p.dtype)) + " problem");
    validate_gemm_problem(p);
  }

  // One bf16 matrix product: fp32 accumulation, the result rounded to bf16 as a GPU epilogue would.
  void run_bf16(const GemmProblem& p, const BlasShape& s, const std::uint16_t* a, const std::uint16_t* b,
                std::uint16_t* c) {
    // Stored shapes (rows × columns) of A and B.
    const std::int64_t a_rows = p.transa ? p.k : p.m, a_cols = p.transa ? p.m : p.k;
    const std::int64_t b_rows = p.transb ? p.n : p.k, b_cols = p.transb ? p.k : p.n;
    c32_.resize(static_cast<std::size_t>(p.ld_c() * p.n));
    if (p.beta != 0.0) widen_bf16(c, c32_.data(), p.m, p.n, p.ld_c());
    if (sbgemm_) {
      sbgemm_(CblasColMajor, s.ta, s.tb, s.m, s.n, s.k, static_cast<float>(p.alpha), a, s.lda, b, s.ldb,
              static_cast<float>(p.beta), c32_.data(), s.ldc);
    } else {
      a32_.resize(static_cast<std::size_t>(p.ld_a() * a_cols));
      b32_.resize(static_cast<std::size_t>(p.ld_b() * b_cols));
      widen_bf16(a, a32_.data(), a_rows, a_cols, p.ld_a());
      widen_bf16(b, b32_.data(), b_rows, b_cols, p.ld_b());
      cblas_sgemm(CblasColMajor, s.ta, s.tb, s.m, s.n, s.k, static_cast<float>(p.alpha), a32_.data(), s.lda,
                  b32_.data(), s.ldb, static_cast<float>(p.beta), c32_.data(), s.ldc);
    }
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) {
        const std::size_t at = static_cast<std::size_t>(i + j * p.ld_c());
        c[at] = float_to_bf16(c32_[at]);
      }
  }

  DType dtype_;
  SbgemmFn sbgemm_ = nullptr;
  std::vector<float> a32_, b32_, c32_;  // bf16 scratch, reused across calls
};

}  // namespace

bool openblas_has_sbgemm() {
  return find_sbgemm() != nullptr;
}

int openblas_threads_for(const GemmEngineOptions& options) {
  if (const char* env = std::getenv("OPENBLAS_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  if (options.host_threads > 0) return options.host_threads;
  // A launcher that bound this rank to a subset of the cores (mpirun --bind-to core) already shared them
  // out; otherwise every rank sees all cores and takes its share.
  const int cores = available_cores();
  if (cores < static_cast<int>(std::thread::hardware_concurrency())) return cores;
  return std::max(1, cores / std::max(1, options.local_ranks));
}

std::unique_ptr<GemmEngine> make_openblas_gemm_engine(DType dtype, const GemmEngineOptions& options) {
  if (dtype != DType::fp32 && dtype != DType::fp64 && dtype != DType::bf16)
    throw unsupported_error(std::string(to_string(dtype)) + " needs the cuda backend");
  return std::make_unique<OpenBlasEngine>(dtype, options);
}

}  // namespace fb::kernels
