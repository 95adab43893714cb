// cublasGemmGroupedBatchedEx behind GroupedGemm. The per-group sizes, alphas and betas are host arrays; the
// A/B/C pointer arrays must be device memory, so each call uploads them (one copy on the stream, before the
// GEMMs that read them; the next call's copy is ordered after those GEMMs on the same stream). The copy is
// from pinned memory: from pageable memory the driver may first wait for the stream to drain (CUDA runtime
// API, "API synchronization behavior"), which would stall the host at every expert GEMM. One problem per
// group (group_size 1): the experts differ in their row counts.
#include "kernels/cuda/gemm_grouped_cublas.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/cuda_check.hpp"  // FB_CHECK_CUBLAS: cuBLAS and cuBLASLt share cublasStatus_t
#include "core/error.hpp"

namespace fb::kernels {
namespace {

bool grouped_type(DType t) {
  return t == DType::fp32 || t == DType::tf32 || t == DType::bf16 || t == DType::fp16;
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

bool nonempty(const GemmProblem& p) {
  return p.m != 0 && p.n != 0 && p.k != 0;
}

class CublasGroupedGemm final : public GroupedGemm {
 public:
  CublasGroupedGemm(Backend& backend, DType dtype) : backend_(backend), dtype_(dtype) {
    FB_CHECK_CUBLAS(cublasCreate(&handle_));
    stream_ = static_cast<cudaStream_t>(backend.native_stream());
    FB_CHECK_CUBLAS(cublasSetStream(handle_, stream_));
    workspace_ = backend.allocate(std::size_t{32} << 20);
    FB_CHECK_CUBLAS(cublasSetWorkspace(handle_, workspace_.data(), workspace_.bytes()));
  }
  ~CublasGroupedGemm() override {
    for (Staging& s : staging_) {
      if (s.copied) {
        cudaEventSynchronize(s.copied);  // the copy still reads s.host
        cudaEventDestroy(s.copied);
      }
      if (s.host) cudaFreeHost(s.host);
    }
    if (handle_) cublasDestroy(handle_);
  }
  CublasGroupedGemm(const CublasGroupedGemm&) = delete;
  CublasGroupedGemm& operator=(const CublasGroupedGemm&) = delete;

  bool supports(std::span<const GemmProblem> problems, std::span<const void* const> a,
                std::span<const void* const> b, std::span<void* const> c) const override {
    constexpr std::int64_t kMax = std::numeric_limits<int>::max();
    for (std::size_t g = 0; g < problems.size(); ++g) {
      const GemmProblem& p = problems[g];
      if (p.batch != 1 || p.dtype != dtype_ || p.m > kMax || p.n > kMax || p.k > kMax || p.ld_a() > kMax ||
          p.ld_b() > kMax || p.ld_c() > kMax)
        return false;
      if (nonempty(p) && !(aligned16(a[g]) && aligned16(b[g]) && aligned16(c[g]))) return false;
    }
    return true;
  }

  void run(std::span<const GemmProblem> problems, std::span<const void* const> a,
           std::span<const void* const> b, std::span<void* const> c) override {
    ta_.clear(), tb_.clear(), m_.clear(), n_.clear(), k_.clear(), lda_.clear(), ldb_.clear(), ldc_.clear();
    alpha_.clear(), beta_.clear(), ptrs_.clear();
    for (std::size_t g = 0; g < problems.size(); ++g) {
      const auto& p = problems[g];
      if (!nonempty(p)) continue;
      validate_gemm_problem(p);
      ta_.push_back(p.transa ? CUBLAS_OP_T : CUBLAS_OP_N);
      tb_.push_back(p.transb ? CUBLAS_OP_T : CUBLAS_OP_N);
      m_.push_back(static_cast<int>(p.m)), n_.push_back(static_cast<int>(p.n)),
          k_.push_back(static_cast<int>(p.k));
      lda_.push_back(static_cast<int>(p.ld_a())), ldb_.push_back(static_cast<int>(p.ld_b()));
      ldc_.push_back(static_cast<int>(p.ld_c()));
      alpha_.push_back(static_cast<float>(p.alpha)), beta_.push_back(static_cast<float>(p.beta));
    }
    const std::size_t groups = m_.size();
    if (groups == 0) return;
    // [A pointers | B pointers | C pointers], uploaded together, each array padded to 4 pointers (32 bytes):
    // with an odd group count the B and C arrays would start 8 bytes off a 16-byte boundary, and cuBLAS
    // checks pointer-array alignment in its batched GEMMs.
    const std::size_t stride = (groups + 3) / 4 * 4;
    for (const auto* array : {&a, &b}) {
      for (std::size_t g = 0; g < problems.size(); ++g)
        if (nonempty(problems[g])) ptrs_.push_back((*array)[g]);
      ptrs_.resize(ptrs_.size() + stride - groups, nullptr);
    }
    for (std::size_t g = 0; g < problems.size(); ++g)
      if (nonempty(problems[g])) ptrs_.push_back(c[g]);
    const std::size_t bytes = ptrs_.size() * sizeof(void*);
    if (device_ptrs_.bytes() < bytes) {
      backend_.synchronize();  // a smaller array may still be read by GEMMs in flight
      device_ptrs_ = backend_.allocate(bytes);
    }
    FB_CHECK_CUDA(
        cudaMemcpyAsync(device_ptrs_.data(), staged(bytes), bytes, cudaMemcpyHostToDevice, stream_));
    FB_CHECK_CUDA(cudaEventRecord(staging_[next_staging_].copied, stream_));
    next_staging_ = (next_staging_ + 1) % staging_.size();
    auto* const* dev = device_ptrs_.as<void*>();
    const cudaDataType_t t = dtype_ == DType::bf16   ? CUDA_R_16BF
                             : dtype_ == DType::fp16 ? CUDA_R_16F
                                                     : CUDA_R_32F;
    const cublasComputeType_t compute =
        dtype_ == DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    group_size_.assign(groups, 1);
    FB_CHECK_CUBLAS(
        cublasGemmGroupedBatchedEx(handle_, ta_.data(), tb_.data(), m_.data(), n_.data(), k_.data(),
                                   alpha_.data(), reinterpret_cast<const void* const*>(dev), t, lda_.data(),
                                   reinterpret_cast<const void* const*>(dev + stride), t, ldb_.data(),
                                   beta_.data(), reinterpret_cast<void* const*>(dev + 2 * stride), t,
                                   ldc_.data(), static_cast<int>(groups), group_size_.data(), compute));
  }

 private:
  // ptrs_ copied into the next pinned staging buffer, once the copy that last read that buffer (calls
  // ago, so it has normally long run) has finished.
  const void* staged(std::size_t bytes) {
    Staging& s = staging_[next_staging_];
    if (s.copied)
      FB_CHECK_CUDA(cudaEventSynchronize(s.copied));
    else
      FB_CHECK_CUDA(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    if (s.bytes < bytes) {
      if (s.host) FB_CHECK_CUDA(cudaFreeHost(s.host));
      s.host = nullptr, s.bytes = 0;
      FB_CHECK_CUDA(cudaHostAlloc(&s.host, bytes, cudaHostAllocDefault));
      s.bytes = bytes;
    }
    std::memcpy(s.host, ptrs_.data(), bytes);
    return s.host;
  }

  struct Staging {
    void* host = nullptr;  // pinned
    std::size_t bytes = 0;
    cudaEvent_t copied = nullptr;  // recorded after the copy from `host`
  };

  Backend& backend_;
  DType dtype_;
  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer workspace_, device_ptrs_;
  std::vector<cublasOperation_t> ta_, tb_;
  std::vector<int> m_, n_, k_, lda_, ldb_, ldc_, group_size_;
  std::vector<float> alpha_, beta_;
  std::vector<const void*> ptrs_;
  // Eight buffers: an MoE layer makes a few grouped calls per direction, so the host, running ahead of the
  // GPU, waits only for a copy several calls back.
  std::array<Staging, 8> staging_{};
  std::size_t next_staging_ = 0;
};

}  // namespace

std::unique_ptr<GroupedGemm> make_cublas_grouped_gemm(Backend& backend, DType dtype) {
  if (!grouped_type(dtype)) return nullptr;
  return std::make_unique<CublasGroupedGemm>(backend, dtype);
}

}  // namespace fb::kernels
