#include "workloads/attention_fp8_scaling.hpp"

#include <algorithm>
#include <cmath>

namespace fb::workloads {

using kernels::Fp8Field;
using kernels::Fp8Tensor;

namespace {

constexpr Fp8Tensor kProduced[] = {Fp8Tensor::s,  Fp8Tensor::o,  Fp8Tensor::dp,
                                   Fp8Tensor::dq, Fp8Tensor::dk, Fp8Tensor::dv};

float& at(std::vector<float>& block, Fp8Tensor t, Fp8Field f) {
  return block[kernels::fp8_slot(t, f)];
}

void set_scale(std::vector<float>& block, Fp8Tensor t, float scale) {
  at(block, t, Fp8Field::scale) = scale;
  at(block, t, Fp8Field::descale) = 1.0f / scale;
}

}  // namespace

float fp8_scale_for_amax(double amax) {
  if (!(amax > 0) || !std::isfinite(amax)) return 1.0f;
  // Exponents kept well inside float's range, so the scale and its reciprocal are both normal floats.
  const double e = std::clamp(std::floor(std::log2(kernels::kFp8E4m3Max / amax)), -100.0, 100.0);
  double scale = std::exp2(e);
  if (amax * scale > kernels::kFp8E4m3Max) scale /= 2;  // log2 rounded up at an exact power of two
  return static_cast<float>(scale);
}

std::vector<double> fp8_attention_bounds(const kernels::AttentionShape& s, double input_amax) {
  const double a = input_amax, dv = static_cast<double>(s.value_dim), scale = s.scale;
  const double shared = static_cast<double>(s.heads / s.kv_heads) * static_cast<double>(s.seq);
  std::vector<double> b(static_cast<std::size_t>(Fp8Tensor::count), 0.0);
  auto set = [&](Fp8Tensor t, double v) { b[static_cast<std::size_t>(t)] = v; };
  set(Fp8Tensor::s, 1.0);
  set(Fp8Tensor::o, a);
  set(Fp8Tensor::dp, scale * 2 * dv * a * a);
  set(Fp8Tensor::dq, scale * 2 * dv * a * a * a);
  set(Fp8Tensor::dk, shared * scale * 2 * dv * a * a * a);
  set(Fp8Tensor::dv, shared * a);
  return b;
}

std::vector<float> fp8_initial_scaling(const kernels::AttentionShape& s, double input_amax) {
  std::vector<float> block(kernels::kFp8ScalingFloats, 0.0f);
  const auto bounds = fp8_attention_bounds(s, input_amax);
  for (std::size_t t = 0; t < static_cast<std::size_t>(Fp8Tensor::count); ++t)
    set_scale(block, static_cast<Fp8Tensor>(t), bounds[t] > 0 ? fp8_scale_for_amax(bounds[t]) : 1.0f);
  return block;
}

void fp8_calibrate(std::vector<float>& block) {
  for (const Fp8Tensor t : kProduced)
    if (const float amax = at(block, t, Fp8Field::amax); amax > 0 && std::isfinite(amax))
      set_scale(block, t, fp8_scale_for_amax(amax));
}

}  // namespace fb::workloads
