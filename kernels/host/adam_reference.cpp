#include "kernels/host/adam_reference.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"

namespace fb::kernels {
namespace {

// Gradients and weights in the step's type, widened to fp32 (the CUDA kernel computes in fp32 too).
float load(const void* p, DType type, std::int64_t i) {
  switch (type) {
    case DType::bf16:
      return bf16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DType::fp16:
      return fp16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}
void store(void* p, DType type, std::int64_t i, float value) {
  switch (type) {
    case DType::bf16:
      static_cast<std::uint16_t*>(p)[i] = float_to_bf16(value);
      break;
    case DType::fp16:
      static_cast<std::uint16_t*>(p)[i] = float_to_fp16(value);
      break;
    default:
      static_cast<float*>(p)[i] = value;
  }
}

void check_type(DType type) {
  if (type != DType::fp32 && type != DType::bf16 && type != DType::fp16)
    throw unsupported_error("multi-tensor Adam supports fp32, bf16 and fp16 weights, not " +
                            std::string(to_string(type)));
}

class HostMultiTensorAdam final : public MultiTensorAdam {
 public:
  HostMultiTensorAdam(std::vector<AdamTensor> tensors, DType type)
      : tensors_(std::move(tensors)), type_(type) {
    check_type(type);
  }
  double step(const AdamParams& p, bool grad_sum_squares) override {
    return adam_reference_step(tensors_, type_, p, grad_sum_squares);
  }

 private:
  std::vector<AdamTensor> tensors_;
  DType type_;
};

}  // namespace

float adam_bias_correction(float beta, std::int64_t step) {
  return 1.0f - std::pow(beta, static_cast<float>(step));
}

double adam_reference_step(std::span<const AdamTensor> tensors, DType type, const AdamParams& p,
                           bool grad_sum_squares) {
  check_type(type);
  const float c1 = adam_bias_correction(p.beta1, p.step);
  const float c2 = adam_bias_correction(p.beta2, p.step);
  double sum = 0;
  for (const AdamTensor& t : tensors) {
    const float scale = p.grad_scale * t.grad_scale;
    double squares = 0;
    for (std::int64_t i = 0; i < t.count; ++i) {
      const float raw = load(t.grad, type, i);
      if (grad_sum_squares) squares += static_cast<double>(raw) * raw;
      const float g = raw * scale;
      t.m[i] = p.beta1 * t.m[i] + (1.0f - p.beta1) * g;
      t.v[i] = p.beta2 * t.v[i] + (1.0f - p.beta2) * g * g;
      const float update = (t.m[i] / c1) / (std::sqrt(t.v[i] / c2) + p.eps) + p.weight_decay * t.master[i];
      t.master[i] -= p.lr * update;
      store(t.param, type, i, t.master[i]);
    }
    sum += squares * t.norm_weight;
  }
  return sum;
}

std::unique_ptr<MultiTensorAdam> make_host_multi_tensor_adam(std::vector<AdamTensor> tensors, DType type) {
  return std::make_unique<HostMultiTensorAdam>(std::move(tensors), type);
}

}  // namespace fb::kernels
