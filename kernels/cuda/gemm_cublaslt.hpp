#pragma once
// The cuda GEMM engine: cuBLASLt matmul for bf16, fp16, tf32, fp32 and fp8 (e4m3/e5m2, TN layout, per-tensor
// scales, bf16 output), a 32 MiB workspace and timed autotuning over the heuristic's top candidates.
// No CUDA types here, so engine-agnostic code (kernels/gemm_engine.cpp) can include it.
#include <memory>

#include "kernels/gemm_engine.hpp"

namespace fb::kernels {

// `backend` must be the cuda backend (its native_stream() is the stream every call is enqueued on).
std::unique_ptr<GemmEngine> make_cublaslt_gemm_engine(Backend& backend, DType dtype,
                                                      const GemmEngineOptions& options);

}  // namespace fb::kernels
