// cuBLASLt GEMM engine. One handle and one 32 MiB workspace per engine; one cached plan (descriptors and the
// chosen algorithm) per distinct problem, so the timed loop issues nothing but cublasLtMatmul.
#include "kernels/cuda/gemm_cublaslt.hpp"
#include "kernels/cuda/gemm_grouped_cublas.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/cuda_check.hpp"
#include "core/error.hpp"

namespace fb::kernels {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::fp16:
      return CUDA_R_16F;
    case DType::fp32:
    case DType::tf32:
      return CUDA_R_32F;
    case DType::fp8_e4m3:
      return CUDA_R_8F_E4M3;
    case DType::fp8_e5m2:
      return CUDA_R_8F_E5M2;
    default:
      throw unsupported_error("cuBLASLt engine: no CUDA type for " + std::string(to_string(t)));
  }
}

bool is_fp8(DType t) {
  return t == DType::fp8_e4m3 || t == DType::fp8_e5m2;
}

struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const { cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const { cublasLtMatrixLayoutDestroy(l); }
};
struct PrefDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { cublasLtMatmulPreferenceDestroy(p); }
};
using DescPtr = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using LayoutPtr = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;

// Operand alignments in bytes, powers of two up to 256: of the address and, in a strided batch, of every
// later matrix. cuBLASLt's heuristics assume 256 unless told (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*), and an
// algorithm chosen for 256 may refuse a pointer into the middle of a buffer: a head's columns of the QKV
// rows, a tensor inside a parameter region.
struct Alignments {
  std::uint32_t a = 256, b = 256, c = 256;
};
std::uint32_t alignment_of(const void* p, std::int64_t batch, std::int64_t stride_bytes) {
  std::uintptr_t bits = reinterpret_cast<std::uintptr_t>(p) | 256u;
  if (batch > 1) bits |= static_cast<std::uintptr_t>(stride_bytes);
  return static_cast<std::uint32_t>(bits & (~bits + 1));  // the lowest set bit
}
Alignments alignments_of(const GemmProblem& p, const GemmTypes& t, const void* a, const void* b,
                         const void* c) {
  const auto bytes = [&](DType type, std::int64_t stride) {
    return stride * static_cast<std::int64_t>(dtype_bytes(type));
  };
  return {alignment_of(a, p.batch, bytes(t.a, p.batch_stride_a())),
          alignment_of(b, p.batch, bytes(t.b, p.batch_stride_b())),
          alignment_of(c, p.batch, bytes(t.c, p.batch_stride_c()))};
}

// Everything that changes the descriptors or the algorithm choice.
using PlanKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, std::int64_t,
                           std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool,
                           std::uint32_t, std::uint32_t, std::uint32_t>;
PlanKey key_of(const GemmProblem& p, const Alignments& al) {
  return {p.m,
          p.n,
          p.k,
          p.batch,
          p.transa,
          p.transb,
          p.ld_a(),
          p.ld_b(),
          p.ld_c(),
          p.batch_stride_a(),
          p.batch_stride_b(),
          p.batch_stride_c(),
          p.beta != 0.0,
          al.a,
          al.b,
          al.c};
}

struct Plan {
  DescPtr desc;
  LayoutPtr a, b, c;  // C and D share one layout (D written in place over C)
  cublasLtMatmulAlgo_t algo{};
  GemmPlanInfo info;
};

template <typename T>
T algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written) !=
      CUBLAS_STATUS_SUCCESS)
    return T{};
  return value;
}

// "algo 66 tile 20 stages 0 splitk 1 swizzle 0 cluster 0": the ids cuBLASLt uses in its enums, enough to
// tell two runs' kernels apart in a report.
std::string describe(const cublasLtMatmulAlgo_t& algo) {
  return fmt::format("algo {} tile {} stages {} splitk {} swizzle {} cluster {}",
                     algo_attr<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID),
                     algo_attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                     algo_attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                     algo_attr<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM),
                     algo_attr<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING),
                     algo_attr<std::uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
}

class CublasLtEngine final : public GemmEngine {
 public:
  CublasLtEngine(Backend& backend, DType dtype, const GemmEngineOptions& options)
      : backend_(backend), dtype_(dtype), types_(gemm_types(dtype)), options_(options) {
    if (backend.kind() != BackendKind::cuda) throw runtime_error("cuBLASLt engine needs the cuda backend");
    stream_ = static_cast<cudaStream_t>(backend.native_stream());
    FB_CHECK_CUBLAS(cublasLtCreate(&handle_));
    workspace_ = backend.allocate(options.workspace_bytes);
  }
  ~CublasLtEngine() override {
    plans_.clear();
    if (handle_) cublasLtDestroy(handle_);
  }

  std::string name() const override { return "cublaslt"; }
  DType dtype() const override { return dtype_; }

  GemmPlanInfo prepare(const GemmProblem& p, const void* a, const void* b, void* c,
                       const GemmScales& scales) override {
    return plan_for(p, a, b, c, scales, std::max(1, options_.autotune)).info;
  }

  void run(const GemmProblem& p, const void* a, const void* b, void* c, const GemmScales& scales) override {
    Plan& plan = plan_for(p, a, b, c, scales, 1);
    set_scales(plan, scales);
    matmul(plan, p, a, b, c, plan.algo);
  }

  // One cuBLAS grouped call where it can run the problems (kernels/cuda/gemm_grouped_cublas.cpp); else, as
  // for fp8, one cuBLASLt matmul per group.
  void run_grouped(std::span<const GemmProblem> problems, std::span<const void* const> a,
                   std::span<const void* const> b, std::span<void* const> c) override {
    if (a.size() != problems.size() || b.size() != problems.size() || c.size() != problems.size())
      throw runtime_error("run_grouped: one A, B and C pointer per group required");
    if (!grouped_made_) grouped_ = make_cublas_grouped_gemm(backend_, dtype_), grouped_made_ = true;
    if (grouped_ && grouped_->supports(problems, a, b, c))
      grouped_->run(problems, a, b, c);
    else
      GemmEngine::run_grouped(problems, a, b, c);
  }

 private:
  void check(const GemmProblem& p) const {
    if (p.dtype != dtype_)
      throw runtime_error("GEMM engine for " + std::string(to_string(dtype_)) + " given a " +
                          std::string(to_string(p.dtype)) + " problem");
    validate_gemm_problem(p);
    // cuBLASLt's fp8 kernels exist only for the "TN" layout: A transposed, B not (cuBLAS docs,
    // cublasLtMatmul).
    if (is_fp8(dtype_) && !(p.transa && !p.transb))
      throw unsupported_error(
          "fp8 GEMM needs A transposed and B not (--ta T --tb N): cuBLASLt has fp8 kernels only "
          "for the TN layout");
    if (p.batch > std::numeric_limits<std::int32_t>::max()) throw usage_error("GEMM batch too large");
  }

  void set_scales(Plan& plan, const GemmScales& s) {
    if (!is_fp8(dtype_)) return;
    // Attributes are host-side settings of the descriptor (no device work): cheap to set on every call.
    const void* a = s.a_scale;
    const void* b = s.b_scale;
    FB_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a, sizeof(a)));
    FB_CHECK_CUBLAS(
        cublasLtMatmulDescSetAttribute(plan.desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b, sizeof(b)));
    // D is bf16: cuBLASLt applies a D scale only to fp8 outputs, so it is left unset.
  }

  cublasStatus_t matmul(Plan& plan, const GemmProblem& p, const void* a, const void* b, void* c,
                        const cublasLtMatmulAlgo_t& algo, bool throw_on_error = true) {
    const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
    const cublasStatus_t st =
        cublasLtMatmul(handle_, plan.desc.get(), &alpha, a, plan.a.get(), b, plan.b.get(), &beta, c,
                       plan.c.get(), c, plan.c.get(), &algo, workspace_.data(), workspace_.bytes(), stream_);
    if (throw_on_error && st != CUBLAS_STATUS_SUCCESS)
      throw_call_failure("cuBLAS", "cublasLtMatmul", cublasLtGetStatusString(st), __FILE__, __LINE__);
    return st;
  }

  LayoutPtr make_layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                        std::int64_t stride) {
    cublasLtMatrixLayout_t raw = nullptr;
    FB_CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&raw, cuda_type(t), static_cast<std::uint64_t>(rows),
                                               static_cast<std::uint64_t>(cols), ld));
    LayoutPtr layout(raw);
    if (batch > 1) {
      const std::int32_t count = static_cast<std::int32_t>(batch);
      FB_CHECK_CUBLAS(
          cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
      FB_CHECK_CUBLAS(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                       &stride, sizeof(stride)));
    }
    return layout;
  }

  // The cached plan for `p`, built on first use. `autotune` > 1 times up to that many heuristic candidates on
  // these buffers (CUDA events on the engine's stream) and keeps the fastest.
  Plan& plan_for(const GemmProblem& p, const void* a, const void* b, void* c, const GemmScales& scales,
                 int autotune) {
    check(p);
    const Alignments al = alignments_of(p, types_, a, b, c);
    const PlanKey key = key_of(p, al);
    if (auto it = plans_.find(key); it != plans_.end() && (autotune <= 1 || it->second.info.timed > 0))
      return it->second;

    Plan plan;
    const cublasComputeType_t compute =
        dtype_ == DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cublasLtMatmulDesc_t raw_desc = nullptr;
    FB_CHECK_CUBLAS(cublasLtMatmulDescCreate(&raw_desc, compute, CUDA_R_32F));
    plan.desc.reset(raw_desc);
    const cublasOperation_t ta = p.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = p.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    FB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    FB_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    set_scales(plan, scales);
    plan.a = make_layout(types_.a, p.transa ? p.k : p.m, p.transa ? p.m : p.k, p.ld_a(), p.batch,
                         p.batch_stride_a());
    plan.b = make_layout(types_.b, p.transb ? p.n : p.k, p.transb ? p.k : p.n, p.ld_b(), p.batch,
                         p.batch_stride_b());
    plan.c = make_layout(types_.c, p.m, p.n, p.ld_c(), p.batch, p.batch_stride_c());

    cublasLtMatmulPreference_t raw_pref = nullptr;
    FB_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&raw_pref));
    std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PrefDeleter> pref(raw_pref);
    const std::uint64_t ws = workspace_.bytes();
    FB_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &ws, sizeof(ws)));
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, al.a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, al.b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, al.c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, al.c}};  // D is written in place over C
    for (const auto& [attr, bytes] : alignments)
      FB_CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(raw_pref, attr, &bytes, sizeof(bytes)));

    const int wanted = std::max(1, std::max(autotune, options_.autotune));
    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<std::size_t>(wanted));
    int returned = 0;
    const cublasStatus_t hst =
        cublasLtMatmulAlgoGetHeuristic(handle_, raw_desc, plan.a.get(), plan.b.get(), plan.c.get(),
                                       plan.c.get(), raw_pref, wanted, found.data(), &returned);
    if (hst != CUBLAS_STATUS_SUCCESS || returned == 0)
      throw unsupported_error(
          fmt::format("cuBLASLt has no {} algorithm for m={} n={} k={} batch={} (ta={} tb={}){}: {}",
                      to_string(dtype_), p.m, p.n, p.k, p.batch, p.transa ? 'T' : 'N', p.transb ? 'T' : 'N',
                      is_fp8(dtype_) ? "; fp8 needs leading dimensions that are multiples of 16" : "",
                      hst == CUBLAS_STATUS_SUCCESS ? "no candidates" : cublasLtGetStatusString(hst)));
    found.resize(static_cast<std::size_t>(returned));

    plan.info.candidates = returned;
    plan.algo = found.front().algo;
    if (autotune > 1 && returned > 1) autotune_candidates(plan, p, a, b, c, found, autotune);
    plan.info.algo = describe(plan.algo);
    plan.info.algo_id = algo_attr<std::int32_t>(plan.algo, CUBLASLT_ALGO_CONFIG_ID);
    auto [it, inserted] = plans_.insert_or_assign(key, std::move(plan));
    (void)inserted;
    return it->second;
  }

  void autotune_candidates(Plan& plan, const GemmProblem& p, const void* a, const void* b, void* c,
                           const std::vector<cublasLtMatmulHeuristicResult_t>& found, int autotune) {
    constexpr int kReps = 5;  // per candidate, after one untimed call that absorbs first-launch costs
    auto timer = backend_.make_timer();
    double best = std::numeric_limits<double>::infinity();
    const int n = std::min<int>(autotune, static_cast<int>(found.size()));
    for (int i = 0; i < n; ++i) {
      const auto& cand = found[static_cast<std::size_t>(i)];
      if (cand.state != CUBLAS_STATUS_SUCCESS || cand.workspaceSize > workspace_.bytes()) continue;
      if (matmul(plan, p, a, b, c, cand.algo, false) != CUBLAS_STATUS_SUCCESS) continue;
      timer->start();
      for (int r = 0; r < kReps; ++r) matmul(plan, p, a, b, c, cand.algo);
      timer->stop();
      const double t = timer->seconds() / kReps;
      ++plan.info.timed;
      if (t < best) {
        best = t;
        plan.algo = cand.algo;
      }
    }
    if (plan.info.timed > 0) plan.info.best_time_us = best * 1e6;
    backend_.synchronize();
  }

  Backend& backend_;
  DType dtype_;
  GemmTypes types_;
  GemmEngineOptions options_;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<PlanKey, Plan> plans_;
  std::unique_ptr<GroupedGemm> grouped_;  // built on the first grouped call; none for fp8
  bool grouped_made_ = false;
};

}  // namespace

std::unique_ptr<GemmEngine> make_cublaslt_gemm_engine(Backend& backend, DType dtype,
                                                      const GemmEngineOptions& options) {
  return std::make_unique<CublasLtEngine>(backend, dtype, options);
}

}  // namespace fb::kernels
