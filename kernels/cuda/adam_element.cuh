#pragma once
// One Adam update in fp32, rounded operation by operation as the host reference computes it
// (kernels/host/adam_reference.cpp, TrainKernels::adam_update on host): explicit _rn intrinsics, so nvcc
// cannot contract a multiply and an add into an FMA. With contraction, m = β1·m + (1−β1)·g differs from
// the host by half an ulp of β1·m, which is all of m once the two terms cancel; without it, cuda and host
// agree bit for bit (the update is memory-bound, so the FMAs were worth nothing).
namespace fb::kernels::cuda_detail {

__device__ __forceinline__ void adam_element_rn(float& master, float& m, float& v, float g, float beta1,
                                                float beta2, float eps, float weight_decay, float c1,
                                                float c2, float lr) {
  m = __fadd_rn(__fmul_rn(beta1, m), __fmul_rn(1.0f - beta1, g));
  v = __fadd_rn(__fmul_rn(beta2, v), __fmul_rn(__fmul_rn(1.0f - beta2, g), g));
  const float denominator = __fadd_rn(__fsqrt_rn(__fdiv_rn(v, c2)), eps);
  const float update = __fadd_rn(__fdiv_rn(__fdiv_rn(m, c1), denominator), __fmul_rn(weight_decay, master));
  master = __fsub_rn(master, __fmul_rn(lr, update));
}

}  // namespace fb::kernels::cuda_detail
