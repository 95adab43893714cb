#include "kernels/gemm_engine.hpp"

#include <string>

#include "core/error.hpp"
#include "kernels/host/gemm_openblas.hpp"
#ifdef FB_HAVE_CUDA
#include "kernels/cuda/gemm_cublaslt.hpp"
#endif

namespace fb::kernels {

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::fp8_e4m3:
      return {DType::fp8_e4m3, DType::fp8_e4m3, DType::bf16};
    case DType::fp8_e5m2:
      return {DType::fp8_e5m2, DType::fp8_e4m3, DType::bf16};
    case DType::tf32:
      return {DType::fp32, DType::fp32, DType::fp32};
    default:
      return {dtype, dtype, dtype};
  }
}

DType gemm_output_dtype(DType input) {
  return gemm_types(input).c;
}

void validate_gemm_problem(const GemmProblem& p) {
  const auto positive = [](const char* field, std::int64_t v) {
    if (v <= 0)
      throw usage_error("GEMM " + std::string(field) + " = " + std::to_string(v) + ": must be positive");
  };
  positive("m", p.m);
  positive("n", p.n);
  positive("k", p.k);
  positive("batch", p.batch);
  const auto at_least = [](const char* field, std::int64_t v, std::int64_t min) {
    if (v < min)
      throw usage_error("GEMM " + std::string(field) + " = " + std::to_string(v) + ": must be at least " +
                        std::to_string(min));
  };
  at_least("lda", p.ld_a(), p.transa ? p.k : p.m);
  at_least("ldb", p.ld_b(), p.transb ? p.n : p.k);
  at_least("ldc", p.ld_c(), p.m);
  if (p.batch > 1) {
    at_least("stride_a", p.batch_stride_a(), 0);
    at_least("stride_b", p.batch_stride_b(), 0);
    // Batches must not write over each other: whole matrices apart, or (column blocks of one wider matrix,
    // as attention heads side by side in a token row) rows apart and all inside the leading dimension.
    const std::int64_t sc = p.batch_stride_c();
    const bool side_by_side = sc >= p.m && sc * (p.batch - 1) + p.m <= p.ld_c();
    if (!side_by_side) at_least("stride_c", sc, p.ld_c() * p.n);
  }
}

void GemmEngine::run_grouped(std::span<const GemmProblem> problems, std::span<const void* const> a,
                             std::span<const void* const> b, std::span<void* const> c) {
  if (a.size() != problems.size() || b.size() != problems.size() || c.size() != problems.size())
    throw runtime_error("run_grouped: one A, B and C pointer per group required");
  for (std::size_t g = 0; g < problems.size(); ++g) {
    const auto& p = problems[g];
    if (p.m == 0 || p.n == 0 || p.k == 0) continue;  // an expert that received no tokens
    run(p, a[g], b[g], c[g]);
  }
}

std::string gemm_unsupported_reason(BackendKind backend, DType dtype) {
  const std::string name(to_string(dtype));
  if (backend == BackendKind::host) {
    switch (dtype) {
      case DType::fp32:
      case DType::fp64:
      case DType::bf16:
        return {};
      case DType::fp16:
      case DType::tf32:
      case DType::fp8_e4m3:
      case DType::fp8_e5m2:
        return (dtype == DType::fp8_e4m3 || dtype == DType::fp8_e5m2 ? std::string("fp8") : name) +
               " needs the cuda backend (the host engine does fp32, fp64 and bf16)";
      default:
        return "GEMM has no " + name + " engine (host: fp32, fp64, bf16)";
    }
  }
  switch (dtype) {
    case DType::bf16:
    case DType::fp16:
    case DType::tf32:
    case DType::fp32:
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
      return {};
    default:
      return "GEMM has no " + name +
             " engine on the cuda backend (bf16, fp16, tf32, fp32, fp8_e4m3, fp8_e5m2)";
  }
}

std::unique_ptr<GemmEngine> make_gemm_engine(Backend& backend, DType dtype,
                                             const GemmEngineOptions& options) {
  if (auto why = gemm_unsupported_reason(backend.kind(), dtype); !why.empty()) throw unsupported_error(why);
  if (backend.kind() == BackendKind::host) return make_openblas_gemm_engine(dtype, options);
#ifdef FB_HAVE_CUDA
  return make_cublaslt_gemm_engine(backend, dtype, options);
#else
  throw unsupported_error("this build has no cuda backend");
#endif
}

}  // namespace fb::kernels
