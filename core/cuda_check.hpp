#pragma once
// FB_CHECK_CUDA / FB_CHECK_CUBLAS / FB_CHECK_NCCL: throw an fb::Error naming the call, the library's status
// text and the place. Only for translation units of the cuda backend (they include the CUDA headers).
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "core/error.hpp"

#define FB_CHECK_CUDA(call)                                                                              \
  do {                                                                                                   \
    const cudaError_t fb_cuda_rc_ = (call);                                                              \
    if (fb_cuda_rc_ != cudaSuccess)                                                                      \
      ::fb::throw_call_failure(                                                                          \
          "CUDA", #call,                                                                                 \
          std::string(cudaGetErrorName(fb_cuda_rc_)) + ": " + cudaGetErrorString(fb_cuda_rc_), __FILE__, \
          __LINE__);                                                                                     \
  } while (0)

#define FB_CHECK_CUBLAS(call)                                                                                \
  do {                                                                                                       \
    const cublasStatus_t fb_cublas_rc_ = (call);                                                             \
    if (fb_cublas_rc_ != CUBLAS_STATUS_SUCCESS)                                                              \
      ::fb::throw_call_failure("cuBLAS", #call, cublasLtGetStatusString(fb_cublas_rc_), __FILE__, __LINE__); \
  } while (0)

#define FB_CHECK_NCCL(call)                                                                            \
  do {                                                                                                 \
    const ncclResult_t fb_nccl_rc_ = (call);                                                           \
    if (fb_nccl_rc_ != ncclSuccess)                                                                    \
      ::fb::throw_call_failure("NCCL", #call,                                                          \
                               std::string(ncclGetErrorString(fb_nccl_rc_)) + " (" +                   \
                                   (ncclGetLastError(nullptr) ? ncclGetLastError(nullptr) : "") + ")", \
                               __FILE__, __LINE__);                                                    \
  } while (0)
