#pragma once
// The host GEMM engine: OpenBLAS cblas_sgemm (fp32), cblas_dgemm (fp64) and bf16 through cblas_sbgemm when
// the loaded OpenBLAS exports it, else emulated (bf16 inputs widened to fp32, cblas_sgemm, output rounded
// to bf16) and flagged emulated() so no one reads it as native bf16 throughput.
#include <memory>

#include "kernels/gemm_engine.hpp"

namespace fb::kernels {

std::unique_ptr<GemmEngine> make_openblas_gemm_engine(DType dtype, const GemmEngineOptions& options);

// The OpenBLAS thread count the engine uses: $OPENBLAS_NUM_THREADS when set (OpenBLAS reads it itself),
// else options.host_threads, else the cores this process may run on divided among the node's ranks.
int openblas_threads_for(const GemmEngineOptions& options);

// True when the loaded OpenBLAS exports cblas_sbgemm (looked up at run time: Debian's 0.3.21 lacks it).
bool openblas_has_sbgemm();

}  // namespace fb::kernels
