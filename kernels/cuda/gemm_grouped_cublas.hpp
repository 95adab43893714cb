#pragma once
// Grouped GEMM through cuBLAS's cublasGemmGroupedBatchedEx (cuBLAS ≥ 12.5): one call runs a list of
// problems with their own m, n, k, leading dimensions, alpha and beta — the MoE experts with their real
// per-expert row counts — instead of one launch per expert. fp32, tf32, bf16 and fp16 with fp32 compute;
// A, B and C of one type; unbatched problems. Used by the cuBLASLt engine's run_grouped. No CUDA types here.
#include <memory>
#include <span>

#include "core/backend.hpp"
#include "kernels/gemm_engine.hpp"

namespace fb::kernels {

class GroupedGemm {
 public:
  virtual ~GroupedGemm() = default;
  // Whether these problems, on these operands, can run as one grouped call: types, no strided batches,
  // sizes within int, and every operand 16-byte aligned (cuBLAS's grouped 16-bit kernels fault on a
  // misaligned operand rather than return an error, and a fault ends the CUDA context).
  virtual bool supports(std::span<const GemmProblem> problems, std::span<const void* const> a,
                        std::span<const void* const> b, std::span<void* const> c) const = 0;
  // Enqueues problem g on a[g], b[g], c[g] on the backend's stream (problems with an empty dimension are
  // skipped).
  virtual void run(std::span<const GemmProblem> problems, std::span<const void* const> a,
                   std::span<const void* const> b, std::span<void* const> c) = 0;
};

// `dtype` is the engine's (the problems' A and B type); nullptr for a type cuBLAS's grouped GEMM lacks
// (fp8), so no handle or workspace is made for an engine that could never use them.
std::unique_ptr<GroupedGemm> make_cublas_grouped_gemm(Backend& backend, DType dtype);

}  // namespace fb::kernels
