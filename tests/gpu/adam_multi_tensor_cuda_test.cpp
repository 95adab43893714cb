// The one-launch CUDA Adam (kernels/cuda/adam_multi_tensor.cu) against the host reference
// (kernels/host/adam_reference.cpp) over a table of tensors of awkward sizes. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/dtype.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/adam_multi_tensor.hpp"
#include "kernels/host/adam_reference.hpp"
#include "tests/gpu/cuda_test_backend.hpp"

namespace fb::kernels {
namespace {

// Host copies of one tensor's state: fp32 master/m/v, gradient and weights as raw bytes of `type`.
struct HostTensor {
  std::vector<float> master, m, v;
  std::vector<std::uint8_t> grad, param;
};

std::vector<std::uint8_t> encode(const std::vector<float>& x, DType type) {
  std::vector<std::uint8_t> out(x.size() * dtype_info(type).bytes);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (type == DType::fp32) {
      std::memcpy(out.data() + 4 * i, &x[i], 4);
    } else {
      const std::uint16_t h = type == DType::bf16 ? float_to_bf16(x[i]) : float_to_fp16(x[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  }
  return out;
}
float decode(const std::vector<std::uint8_t>& bytes, DType type, std::size_t i) {
  if (type == DType::fp32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return type == DType::bf16 ? bf16_to_float(h) : fp16_to_float(h);
}

// One fp32 tensor on the device: master weights and gradient as given, moments zero, and its Adam engine.
struct OneTensor {
  DeviceBuffer master, m, v, grad, weights;
  std::unique_ptr<MultiTensorAdam> engine;
};
OneTensor one_fp32_tensor(Backend& backend, const std::vector<float>& master,
                          const std::vector<float>& grad) {
  const std::size_t n = master.size(), bytes = n * 4;
  const std::vector<float> zeros(n, 0.0f);
  OneTensor t{backend.allocate(bytes), backend.allocate(bytes), backend.allocate(bytes),
              backend.allocate(bytes), backend.allocate(bytes), nullptr};
  backend.copy_to_device(t.master, master.data(), bytes);
  backend.copy_to_device(t.m, zeros.data(), bytes);
  backend.copy_to_device(t.v, zeros.data(), bytes);
  backend.copy_to_device(t.grad, grad.data(), bytes);
  t.engine = make_multi_tensor_adam(backend,
                                    {{t.master.as<float>(), t.m.as<float>(), t.v.as<float>(), t.grad.data(),
                                      t.weights.data(), static_cast<std::int64_t>(n)}},
                                    DType::fp32);
  return t;
}

TEST(AdamMultiTensorCuda, OneLaunchMatchesTheHostReference) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  // Sizes: a partial vector, chunk boundaries (8192), an empty tensor, a large one, and one whose pointers
  // are offset by one element (not 16-byte aligned: the element-wise path).
  const std::vector<std::int64_t> sizes{5, 8192, 8193, 0, 100003, 24, 70001};
  const std::size_t misaligned = 5;
  for (const DType type : {DType::bf16, DType::fp16, DType::fp32}) {
    const std::size_t es = dtype_info(type).bytes;
    SplitMix64 rng(11);
    auto values = [&](std::int64_t n, double lo, double hi) {
      std::vector<float> x(n);
      for (auto& e : x) e = static_cast<float>(lo + (hi - lo) * rng.uniform());
      return x;
    };
    std::vector<HostTensor> host(sizes.size());
    std::vector<DeviceBuffer> buffers;
    std::vector<AdamTensor> dev_tensors, host_tensors;
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      const std::int64_t n = sizes[t];
      const std::size_t pad = t == misaligned ? 1 : 0;
      HostTensor& h = host[t];
      h.master = values(n, -1, 1);
      h.m = values(n, -0.01, 0.01);
      h.v = values(n, 0, 1e-4);
      h.param = encode(h.master, type);
      auto upload = [&](const void* data, std::size_t bytes, std::size_t offset_bytes) {
        buffers.push_back(backend->allocate(bytes + offset_bytes + 16));
        if (data && bytes) backend->copy_to_device(buffers.back(), data, bytes, offset_bytes);
        return static_cast<std::uint8_t*>(buffers.back().data()) + offset_bytes;
      };
      AdamTensor d;
      d.master = reinterpret_cast<float*>(upload(h.master.data(), n * 4, pad * 4));
      d.m = reinterpret_cast<float*>(upload(h.m.data(), n * 4, pad * 4));
      d.v = reinterpret_cast<float*>(upload(h.v.data(), n * 4, pad * 4));
      d.grad = upload(nullptr, n * es, pad * es);  // filled per step
      d.param = upload(h.param.data(), n * es, pad * es);
      d.count = n;
      dev_tensors.push_back(d);
    }
    auto engine = make_multi_tensor_adam(*backend, dev_tensors, type);
    for (std::int64_t step = 1; step <= 3; ++step) {
      double expected_squares = 0;
      host_tensors.clear();
      for (std::size_t t = 0; t < sizes.size(); ++t) {
        HostTensor& h = host[t];
        h.grad = encode(values(sizes[t], -2, 2), type);
        const std::size_t pad = t == misaligned ? 1 : 0;
        // Upload this step's gradient into the device tensor (its buffer is the 4th of the tensor's five).
        DeviceBuffer& g = buffers[t * 5 + 3];
        if (!h.grad.empty()) backend->copy_to_device(g, h.grad.data(), h.grad.size(), pad * es);
        host_tensors.push_back(
            {h.master.data(), h.m.data(), h.v.data(), h.grad.data(), h.param.data(), sizes[t]});
      }
      AdamParams p;
      p.lr = 1e-3f, p.weight_decay = 0.1f, p.grad_scale = 0.5f, p.step = step;
      expected_squares = adam_reference_step(host_tensors, type, p, true);
      const double squares = engine->step(p, true);
      EXPECT_NEAR(squares, expected_squares, 1e-5 * expected_squares) << to_string(type) << " step " << step;
    }
    backend->synchronize();
    for (std::size_t t = 0; t < sizes.size(); ++t) {
      const std::int64_t n = sizes[t];
      const std::size_t pad = t == misaligned ? 1 : 0;
      std::vector<float> master(n), m(n), v(n);
      std::vector<std::uint8_t> param(n * es);
      if (n == 0) continue;
      backend->copy_to_host(master.data(), buffers[t * 5], n * 4, pad * 4);
      backend->copy_to_host(m.data(), buffers[t * 5 + 1], n * 4, pad * 4);
      backend->copy_to_host(v.data(), buffers[t * 5 + 2], n * 4, pad * 4);
      backend->copy_to_host(param.data(), buffers[t * 5 + 4], n * es, pad * es);
      int bad = 0;
      for (std::int64_t i = 0; i < n && bad < 5; ++i) {
        const float ref = host[t].master[i];
        // The kernel rounds every operation as the host does (kernels/cuda/adam_element.cuh: no FMA
        // contraction), so master, moments and the stored weight agree bit for bit.
        const bool ok_master = master[i] == ref;
        const bool ok_m = m[i] == host[t].m[i];
        const bool ok_v = v[i] == host[t].v[i];
        const float w = decode(param, type, i), w_ref = decode(host[t].param, type, i);
        const bool ok_param = w == w_ref;
        if (!(ok_master && ok_m && ok_v && ok_param)) {
          ++bad;
          ADD_FAILURE() << std::setprecision(9) << to_string(type) << " tensor " << t << " element " << i
                        << ": master " << master[i] << " vs " << ref << ", m " << m[i] << " vs "
                        << host[t].m[i] << ", v " << v[i] << " vs " << host[t].v[i] << ", weight " << w
                        << " vs " << w_ref;
        }
      }
    }
  }
}

TEST(AdamMultiTensorCuda, WithoutTheNormItReturnsZeroAndStillUpdates) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  // Step 1 with g = 0.5 everywhere moves every master weight from 1 to 0.9 (see tests/unit/adam_reference).
  const std::int64_t n = 1000;
  auto t = one_fp32_tensor(*backend, std::vector<float>(n, 1.0f), std::vector<float>(n, 0.5f));
  AdamParams p;
  p.lr = 0.1f, p.beta1 = 0.9f, p.beta2 = 0.999f, p.step = 1;
  EXPECT_EQ(t.engine->step(p, false), 0.0);
  backend->synchronize();
  std::vector<float> out(n);
  backend->copy_to_host(out.data(), t.weights, n * 4);
  for (const float x : out) ASSERT_NEAR(x, 0.9f, 1e-6f);
}

// Σ g² is added in fp64 from the first product, as the host reference adds it: gradients of 1e20, whose
// squares overflow fp32 (above 3.4e38), still give 1000 · 1e40, on the vector path and the element tail.
TEST(AdamMultiTensorCuda, GradientSquaresAddInFp64) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  const std::int64_t n = 1003;  // 125 vectors of 8, then 3 elements
  auto t = one_fp32_tensor(*backend, std::vector<float>(n, 1.0f), std::vector<float>(n, 1e20f));
  AdamParams p;
  p.step = 1;
  const double squares = t.engine->step(p, true);
  const double expected = n * (static_cast<double>(1e20f) * static_cast<double>(1e20f));
  EXPECT_TRUE(std::isfinite(squares)) << squares;
  EXPECT_NEAR(squares, expected, 1e-12 * expected);
}

// The gradient norm is summed per chunk and then in chunk order (kernels/cuda/ordered_sum.cuh): the same
// gradients give the same bits every step, however the blocks are scheduled.
TEST(AdamMultiTensorCuda, GradientNormRepeatsBitForBit) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  const std::int64_t n = 3'000'017;  // 367 chunks, the last one partial
  SplitMix64 rng(5);
  std::vector<float> master(n), grad(n);
  for (std::int64_t i = 0; i < n; ++i) {
    master[i] = static_cast<float>(rng.uniform() - 0.5);
    grad[i] = static_cast<float>(4 * rng.uniform() - 2);
  }
  double expected = 0;
  for (const float x : grad) expected += static_cast<double>(x) * x;
  auto t = one_fp32_tensor(*backend, master, grad);
  AdamParams p;
  p.lr = 1e-4f;
  std::vector<double> norms;
  for (std::int64_t step = 1; step <= 20; ++step) {
    p.step = step;
    norms.push_back(t.engine->step(p, true));  // the weights move; the gradient, and so its norm, does not
  }
  EXPECT_NEAR(norms[0], expected, 1e-6 * expected);
  for (std::size_t i = 1; i < norms.size(); ++i) EXPECT_EQ(norms[i], norms[0]) << "step " << i + 1;
}

}  // namespace
}  // namespace fb::kernels
