#pragma once
// The GEMM engine interface: one matrix multiply on the backend's memory, by cuBLASLt (cuda) or OpenBLAS
// (host). Workloads (the gemm benchmark, the train step) code against this and never see either library.
//
// Conventions (BLAS / cuBLAS, column-major):
//   C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C      for each of `batch` matrices
//   op(A) = A (transa = false: A stored m×k, lda ≥ m) or Aᵀ (transa = true: A stored k×m, lda ≥ k);
//   likewise B (k×n, ldb ≥ k, or n×k, ldb ≥ n). Element (i, j) of a stored matrix X is X[i + j·ldX].
//   A row-major  Y[M×N] = X[M×K] · W[K×N]  is the column-major  Yᵀ = Wᵀ·Xᵀ: pass (m=N, n=M, k=K, a=W, b=X).
// Input and output types: A and B are `dtype`; C is gemm_output_dtype(dtype) (fp8 → bf16, tf32 → fp32,
// otherwise the same type); accumulation is fp32 (fp64 for fp64).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/backend.hpp"
#include "core/dtype.hpp"

namespace fb::kernels {

struct GemmProblem {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;  // strided batch: matrix b of A starts at a + b·stride_a elements
  bool transa = false, transb = false;
  DType dtype = DType::fp32;  // type of A and B
  // 0 = packed (the smallest legal value): lda = transa ? k : m, ldb = transb ? n : k, ldc = m,
  // stride_x = ldx · columns of the stored matrix.
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  double alpha = 1.0, beta = 0.0;  // beta ≠ 0 reads C (gradient accumulation)

  // Resolved leading dimensions and strides (the packed values where 0).
  std::int64_t ld_a() const { return lda ? lda : (transa ? k : m); }
  std::int64_t ld_b() const { return ldb ? ldb : (transb ? n : k); }
  std::int64_t ld_c() const { return ldc ? ldc : m; }
  std::int64_t batch_stride_a() const { return stride_a ? stride_a : ld_a() * (transa ? m : k); }
  std::int64_t batch_stride_b() const { return stride_b ? stride_b : ld_b() * (transb ? k : n); }
  std::int64_t batch_stride_c() const { return stride_c ? stride_c : ld_c() * n; }
  // Elements each operand spans (all batches): what its buffer must hold.
  std::int64_t elements_a() const { return batch_stride_a() * (batch - 1) + ld_a() * (transa ? m : k); }
  std::int64_t elements_b() const { return batch_stride_b() * (batch - 1) + ld_b() * (transb ? k : n); }
  std::int64_t elements_c() const { return batch_stride_c() * (batch - 1) + ld_c() * n; }
};

// Element types of the three operands for a GEMM of `dtype`. All equal `dtype` except: tf32 (fp32 storage,
// tf32 tensor-core math), fp8_e4m3 (e4m3 × e4m3 → bf16) and fp8_e5m2, which is the backward-pass pairing
// e5m2 (A, gradients) × e4m3 (B, weights) → bf16, because cuBLASLt has no e5m2 × e5m2 kernel.
struct GemmTypes {
  DType a, b, c;
};
GemmTypes gemm_types(DType dtype);
// C's element type for inputs of `input` (gemm_types(input).c).
DType gemm_output_dtype(DType input);

// Throws a usage Error naming the field ("GEMM m = 0: must be positive", leading dimension too small, …).
void validate_gemm_problem(const GemmProblem& problem);

// fp8 per-tensor scales (cuBLASLt A/B/D scale pointers): device pointers to one float each; nullptr = 1.0.
// cuBLASLt computes D = scale_d · (alpha · scale_a · scale_b · op(A)·op(B) + beta · C); d_scale applies only
// to an fp8 D, and D is bf16 here, so it is ignored.
struct GemmScales {
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  const float* d_scale = nullptr;
};

// How an engine will run a problem: the chosen algorithm, and how it was chosen.
struct GemmPlanInfo {
  std::string algo;    // cuBLASLt: "algo 66 tile 20 stages 0 splitk 1 swizzle 0 cluster 0"; host: engine name
  int algo_id = -1;    // cuBLASLt CUBLASLT_ALGO_CONFIG_ID of the kept algorithm; -1 on host
  int candidates = 0;  // heuristic candidates considered
  int timed = 0;       // candidates timed by autotune (0 = heuristic's first choice taken untimed)
  double best_time_us = 0;  // autotune: time of the kept candidate (one call)
};

struct GemmEngineOptions {
  int autotune = 8;  // cuda: time the heuristic's top-N candidates and keep the fastest; 1 = take the first
  std::size_t workspace_bytes = std::size_t{32} << 20;  // cuBLASLt workspace (32 MiB, as Hopper needs)
  // host: OpenBLAS threads. 0 = $OPENBLAS_NUM_THREADS when set, else cores / ranks on this node.
  int host_threads = 0;
  int local_ranks = 1;  // ranks sharing this node (from MpiContext::local_size)
};

class GemmEngine {
 public:
  virtual ~GemmEngine() = default;

  // "cublaslt", "openblas cblas_sgemm", "openblas sgemm (bf16 emulated)".
  virtual std::string name() const = 0;
  virtual DType dtype() const = 0;
  // True when the engine does not compute natively in its dtype (host bf16 without cblas_sbgemm: inputs
  // rounded to bf16, multiplied in fp32). Reports say so, so no one reads it as bf16 throughput.
  virtual bool emulated() const { return false; }

  // Chooses the algorithm for `problem` (cuda: autotunes on these buffers, which it may overwrite in c) and
  // caches it; run() of the same problem reuses it. Optional: run() plans untimed on first use.
  virtual GemmPlanInfo prepare(const GemmProblem& problem, const void* a, const void* b, void* c,
                               const GemmScales& scales = {}) = 0;

  // Enqueues C = op(A)·op(B) on the backend's stream: asynchronous on cuda (synchronise or time with the
  // backend's Timer), complete on return on host. Pointers are backend memory (DeviceBuffer::data()).
  virtual void run(const GemmProblem& problem, const void* a, const void* b, void* c,
                   const GemmScales& scales = {}) = 0;

  // Grouped GEMM (MoE experts): problem g uses a[g], b[g], c[g]; each group has its own m (tokens routed
  // to that expert; 0 = skipped). The default runs the groups one after another on the stream.
  virtual void run_grouped(std::span<const GemmProblem> problems, std::span<const void* const> a,
                           std::span<const void* const> b, std::span<void* const> c);
};

// The engine for `backend` and `dtype`. Throws an unsupported Error for what the backend cannot do
// ("fp8 needs the cuda backend", "tf32 needs the cuda backend", fp64 on cuda).
std::unique_ptr<GemmEngine> make_gemm_engine(Backend& backend, DType dtype,
                                             const GemmEngineOptions& options = {});

// The same decision without building an engine (for validating options before allocating anything):
// empty when supported, else the error message.
std::string gemm_unsupported_reason(BackendKind backend, DType dtype);

}  // namespace fb::kernels
