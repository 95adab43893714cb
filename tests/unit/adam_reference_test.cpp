// The host reference of the multi-tensor Adam (kernels/host/adam_reference.cpp) against hand-computed steps.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/numeric_formats.hpp"
#include "kernels/host/adam_reference.hpp"

namespace fb::kernels {
namespace {

struct Tensor {  // host storage for one AdamTensor
  explicit Tensor(std::vector<float> w, std::vector<float> g)
      : master(w), m(w.size()), v(w.size()), grad(std::move(g)), param(w.size()) {}
  std::vector<float> master, m, v, grad, param;
  AdamTensor view() {
    return {master.data(), m.data(),     v.data(),
            grad.data(),   param.data(), static_cast<std::int64_t>(m.size())};
  }
};

AdamParams params(std::int64_t step) {
  AdamParams p;
  p.lr = 0.1f;
  p.beta1 = 0.9f;
  p.beta2 = 0.999f;
  p.eps = 1e-8f;
  p.step = step;
  return p;
}

TEST(AdamReference, TwoStepsMatchTheHandComputedUpdate) {
  // Step 1, g = 0.5: m = 0.05, v = 0.00025; m̂ = 0.05/0.1 = 0.5, v̂ = 0.00025/0.001 = 0.25, so the step is
  // lr·0.5/0.5 = 0.1 and w = 0.9. Step 2, g = −1: m = 0.045 − 0.1 = −0.055, v = 0.00024975 + 0.001 =
  // 0.00124975; m̂ = −0.055/0.19 = −0.2894737, v̂ = 0.00124975/0.001999 = 0.6251876, √v̂ = 0.7906881, so
  // w = 0.9 + 0.1·0.3661035 = 0.9366104.
  Tensor t({1.0f}, {0.5f});
  AdamTensor view = t.view();
  adam_reference_step({&view, 1}, DType::fp32, params(1), false);
  EXPECT_NEAR(t.m[0], 0.05f, 1e-7);
  // 1 − 0.999f is 0.00099998713 in fp32: v carries that relative error (1.3e-5); the update does not, since
  // the bias correction divides it out.
  EXPECT_NEAR(t.v[0], 0.00025f, 0.00025f * 2e-5f);
  EXPECT_NEAR(t.master[0], 0.9f, 1e-6);
  EXPECT_EQ(t.param[0], t.master[0]);
  t.grad[0] = -1.0f;
  adam_reference_step({&view, 1}, DType::fp32, params(2), false);
  EXPECT_NEAR(t.m[0], -0.055f, 1e-7);
  EXPECT_NEAR(t.v[0], 0.00124975f, 0.00124975f * 2e-5f);
  EXPECT_NEAR(t.master[0], 0.9366104f, 1e-6);
}

TEST(AdamReference, WeightDecayAndGradScale) {
  // w = 2, raw g = 2 scaled by 0.25 → 0.5: the Adam step is 0.1 as above, weight decay adds lr·wd·w = 0.02.
  Tensor t({2.0f}, {2.0f});
  AdamTensor view = t.view();
  AdamParams p = params(1);
  p.weight_decay = 0.1f;
  p.grad_scale = 0.25f;
  adam_reference_step({&view, 1}, DType::fp32, p, false);
  EXPECT_NEAR(t.master[0], 1.88f, 1e-6);
  EXPECT_NEAR(t.m[0], 0.05f, 1e-7);
}

TEST(AdamReference, WritesRoundedLowPrecisionWeights) {
  // Master 1 → 0.9 after step 1 (as above); bf16(0.9) = 0.8984375 (7 mantissa bits: 1.796875·2⁻¹),
  // fp16(0.9) = 0.89990234375 (10 bits: (1 + 819/1024)·2⁻¹).
  for (const DType type : {DType::bf16, DType::fp16}) {
    float master = 1.0f, m = 0.0f, v = 0.0f;
    const std::uint16_t grad = type == DType::bf16 ? float_to_bf16(0.5f) : float_to_fp16(0.5f);
    std::uint16_t param = 0;
    AdamTensor view{&master, &m, &v, &grad, &param, 1};
    adam_reference_step({&view, 1}, type, params(1), false);
    EXPECT_NEAR(master, 0.9f, 1e-6);
    const float written = type == DType::bf16 ? bf16_to_float(param) : fp16_to_float(param);
    EXPECT_EQ(written, type == DType::bf16 ? 0.8984375f : 0.89990234375f) << to_string(type);
  }
}

TEST(AdamReference, UpdatesEveryTensorAndSumsRawGradientSquares) {
  // Three tensors (one empty): every element sees the same step-1 update of −lr·sign(g), and Σ g² is of
  // the raw gradients: 1 + 4 + 9 + 0.25 = 14.25 (grad_scale does not enter it).
  Tensor a({1.0f, 1.0f, 1.0f}, {1.0f, -2.0f, 3.0f}), empty({}, {}), b({5.0f}, {0.5f});
  std::vector<AdamTensor> views{a.view(), empty.view(), b.view()};
  AdamParams p = params(1);
  p.grad_scale = 0.5f;
  EXPECT_DOUBLE_EQ(adam_reference_step(views, DType::fp32, p, true), 14.25);
  EXPECT_NEAR(a.master[0], 0.9f, 1e-6);
  EXPECT_NEAR(a.master[1], 1.1f, 1e-6);
  EXPECT_NEAR(a.master[2], 0.9f, 1e-6);
  EXPECT_NEAR(b.master[0], 4.9f, 1e-6);
  EXPECT_EQ(adam_reference_step(views, DType::fp32, params(2), false), 0.0);
}

TEST(AdamReference, TheEngineOnAHostBackendIsTheReference) {
  Tensor a({1.0f, 2.0f}, {0.5f, -0.5f}), b({1.0f, 2.0f}, {0.5f, -0.5f});
  auto engine = make_host_multi_tensor_adam({a.view()}, DType::fp32);
  AdamTensor view = b.view();
  EXPECT_DOUBLE_EQ(engine->step(params(1), true), 0.5);
  adam_reference_step({&view, 1}, DType::fp32, params(1), false);
  EXPECT_EQ(a.master, b.master);
  EXPECT_EQ(a.param, b.param);
}

TEST(AdamReference, RejectsOtherWeightTypes) {
  EXPECT_THROW(make_host_multi_tensor_adam({}, DType::fp8_e4m3), Error);
}

}  // namespace
}  // namespace fb::kernels
