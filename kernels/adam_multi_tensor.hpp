#pragma once
// One-launch Adam over every parameter tensor of a model (issue 15): one pass that reads each gradient once,
// updates the fp32 master weights and moments and writes the low-precision weights, instead of one launch
// per tensor. Optionally it also returns Σ grad² (the gradient-norm input the step reports) from that pass.
// The update is TrainKernels::adam_update's (kernels/train_kernels.hpp), element for element:
//   g = grad·(grad_scale·tensor grad_scale); m = β1·m + (1−β1)·g; v = β2·v + (1−β2)·g²
//   master −= lr·((m / (1−β1^t)) / (sqrt(v / (1−β2^t)) + ε) + wd·master); param = round(master)
// (Kingma & Ba, "Adam", ICLR 2015, Algorithm 1; decoupled weight decay as AdamW, Loshchilov & Hutter 2019.)
// Two implementations: kernels/host/adam_reference.cpp (the reference) and kernels/cuda/adam_multi_tensor.cu.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "kernels/train_kernels.hpp"

namespace fb::kernels {

// One parameter tensor: fp32 master weights and moments, and the gradient and weights in the step's type.
// All pointers are backend memory of `count` elements. grad_scale multiplies AdamParams::grad_scale for this
// tensor (a training step averages region by region: dense over DP, experts over expert-DP); norm_weight
// weighs its Σ grad² in the returned sum (1/replicas, so each replicated gradient counts once).
struct AdamTensor {
  float* master = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  const void* grad = nullptr;
  void* param = nullptr;
  std::int64_t count = 0;
  float grad_scale = 1.0f;
  double norm_weight = 1.0;
};

class MultiTensorAdam {
 public:
  virtual ~MultiTensorAdam() = default;
  // One Adam step over every tensor. With `grad_sum_squares`, also returns Σ_tensors norm_weight · Σ grad²
  // of the raw gradients (before any grad_scale) in fp64, after waiting for the step; without it returns 0
  // and does not wait.
  virtual double step(const AdamParams& p, bool grad_sum_squares) = 0;
};

// The tensor table is fixed for the engine's lifetime (a model's parameters do not move). `type` is fp32,
// bf16 or fp16; anything else is an unsupported Error. Host reference on a host backend, one CUDA kernel
// launch per step on a cuda backend.
std::unique_ptr<MultiTensorAdam> make_multi_tensor_adam(Backend& backend, std::vector<AdamTensor> tensors,
                                                        DType type);

}  // namespace fb::kernels
