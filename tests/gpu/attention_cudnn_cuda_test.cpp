// cuDNN fused attention (kernels/cuda/attention_cudnn.cpp) against the host reference attention
// (kernels/host/attention_reference.cpp) on small shapes: output, log-sum-exp stats and the three gradients,
// causal and not, grouped-query heads, bf16 and fp16; fp8_e4m3 against the host reference engine's fp8
// (same scaling recipe, amax compared) and the exact answer. Skips without a GPU or without cuDNN.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/cudnn_library.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/attention_engine.hpp"
#include "kernels/host/attention_reference.hpp"
#include "tests/gpu/cuda_test_backend.hpp"
#include "workloads/attention_check.hpp"
#include "workloads/attention_fp8_scaling.hpp"

namespace fb::kernels {
namespace {

// Random values in [-1, 1) rounded to `type`, as floats (the reference sees exactly what the GPU sees).
std::vector<float> random_rounded(std::size_t n, std::uint64_t seed, DType type) {
  SplitMix64 rng(seed);
  std::vector<float> x(n);
  for (auto& e : x) {
    const float f = static_cast<float>(rng.uniform() * 2.0 - 1.0);
    e = type == DType::bf16 ? bf16_to_float(float_to_bf16(f)) : fp16_to_float(float_to_fp16(f));
  }
  return x;
}
std::vector<std::uint16_t> encode(const std::vector<float>& x, DType type) {
  std::vector<std::uint16_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = type == DType::bf16 ? float_to_bf16(x[i]) : float_to_fp16(x[i]);
  return out;
}
std::vector<float> decode(const std::vector<std::uint16_t>& x, DType type) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    out[i] = type == DType::bf16 ? bf16_to_float(x[i]) : fp16_to_float(x[i]);
  return out;
}

// Largest |got − want| relative to the largest |want|: one number per tensor, robust to near-zero entries.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
  }
  return err / std::max(scale, 1e-30);
}

TEST(AttentionCudnnCuda, ForwardAndGradientsMatchTheHostReference) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  if (!cudnn_attention_compiled_in() || !cudnn_library().handle) GTEST_SKIP() << cudnn_library().error;
  auto selection = make_attention_engine(*backend, AttentionEngineChoice::cudnn);
  ASSERT_EQ(selection.engine, "cudnn");
  FusedAttention& fused = *selection.fused;

  struct Case {
    std::int64_t batch, seq, heads, kv_heads, dim, value_dim;
    bool causal;
    bool optional;  // run where cuDNN supports it (MLA's wider query/key heads), else print why not
  };
  const Case cases[] = {{2, 128, 8, 2, 64, 64, true, false},
                        {1, 256, 4, 4, 128, 128, true, false},
                        {2, 96, 4, 1, 64, 64, false, false},
                        {1, 128, 4, 4, 192, 128, true, true}};
  for (const DType type : {DType::bf16, DType::fp16}) {
    // bf16 keeps 8 significant bits, fp16 11: P and dS are rounded to the type inside the fused kernels.
    const double tol = type == DType::bf16 ? 3e-2 : 8e-3;
    for (const Case& c : cases) {
      AttentionShape s;
      s.batch = c.batch, s.seq = c.seq, s.heads = c.heads, s.kv_heads = c.kv_heads;
      s.head_dim = c.dim, s.value_dim = c.value_dim, s.causal = c.causal;
      s.scale = 1.0f / std::sqrt(static_cast<float>(c.dim));
      if (std::string why; c.optional && !fused.supports(s, type, why)) {
        std::printf("optional case d %lld/%lld not supported by this cuDNN: %s\n",
                    static_cast<long long>(c.dim), static_cast<long long>(c.value_dim), why.c_str());
        continue;
      }
      const std::size_t tq = s.batch * s.seq * s.heads, tk = s.batch * s.seq * s.kv_heads;
      const std::size_t nq = tq * s.head_dim, nk = tk * s.head_dim, no = tq * s.value_dim,
                        nv = tk * s.value_dim;
      const std::size_t ns = s.batch * s.heads * s.seq;
      const auto q = random_rounded(nq, 1, type), k = random_rounded(nk, 2, type),
                 v = random_rounded(nv, 3, type);
      const auto d_o = random_rounded(no, 4, type);
      std::vector<float> o(no), stats(ns), dq(nq), dk(nk), dv(nv);
      attention_forward_reference(s, q.data(), k.data(), v.data(), o.data(), stats.data());
      attention_backward_reference(s, q.data(), k.data(), v.data(), o.data(), d_o.data(), dq.data(),
                                   dk.data(), dv.data());

      auto upload = [&](const std::vector<float>& x) {
        const auto bits = encode(x, type);
        auto buf = backend->allocate(bits.size() * 2);
        backend->copy_to_device(buf, bits.data(), bits.size() * 2);
        return buf;
      };
      auto d_q = upload(q), d_k = upload(k), d_v = upload(v), d_do = upload(d_o);
      auto d_out = backend->allocate(no * 2), d_stats = backend->allocate(ns * 4);
      auto d_dq = backend->allocate(nq * 2), d_dk = backend->allocate(nk * 2),
           d_dv = backend->allocate(nv * 2);
      fused.forward(s, type, d_q.data(), d_k.data(), d_v.data(), d_out.data(), d_stats.as<float>(), nullptr);
      // Backward from the GPU's own forward output, as a training step runs it.
      fused.backward(s, type, d_q.data(), d_k.data(), d_v.data(), d_out.data(), d_do.data(),
                     d_stats.as<float>(), d_dq.data(), d_dk.data(), d_dv.data(), nullptr);
      backend->synchronize();
      auto download = [&](const DeviceBuffer& buf, std::size_t n) {
        std::vector<std::uint16_t> bits(n);
        backend->copy_to_host(bits.data(), buf, n * 2);
        return decode(bits, type);
      };
      std::vector<float> got_stats(ns);
      backend->copy_to_host(got_stats.data(), d_stats, ns * 4);
      const std::string what = std::string(to_string(type)) + " b" + std::to_string(c.batch) + " s" +
                               std::to_string(c.seq) + " h" + std::to_string(c.heads) + "/" +
                               std::to_string(c.kv_heads) + " d" + std::to_string(c.dim) + "/" +
                               std::to_string(c.value_dim) + (c.causal ? " causal" : " full");
      EXPECT_LT(relative_error(download(d_out, no), o), tol) << what << ": o";
      EXPECT_LT(relative_error(got_stats, stats), 1e-3) << what << ": stats (log-sum-exp)";
      EXPECT_LT(relative_error(download(d_dq, nq), dq), tol) << what << ": dq";
      EXPECT_LT(relative_error(download(d_dk, nk), dk), tol) << what << ": dk";
      EXPECT_LT(relative_error(download(d_dv, nv), dv), tol) << what << ": dv";
    }
  }
}

TEST(AttentionCudnnCuda, AutoPicksCudnnOnAGpuWithCudnn) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  if (!cudnn_attention_compiled_in() || !cudnn_library().handle) GTEST_SKIP() << cudnn_library().error;
  // Llama 3 8B's attention at a short sequence: 32 query heads, 8 KV heads of 128.
  AttentionShape s;
  s.batch = 1, s.seq = 512, s.heads = 32, s.kv_heads = 8, s.head_dim = 128, s.value_dim = 128;
  s.scale = 1.0f / std::sqrt(128.0f);
  auto selection = make_attention_engine(*backend, AttentionEngineChoice::automatic, &s, DType::bf16);
  EXPECT_EQ(selection.engine, "cudnn") << selection.notice;
  EXPECT_EQ(selection.notice, "");
  ASSERT_NE(selection.fused, nullptr);
  EXPECT_EQ(selection.fused->name(), "cudnn");
}

// The layout the training step uses: Q, K and V as column blocks of one token-major QKV buffer (rows of
// (heads + 2·kv_heads)·d elements), gradients written into the same kind of buffer.
TEST(AttentionCudnnCuda, QkvColumnBlocksOfOneBufferMatchTheHostReference) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  if (!cudnn_attention_compiled_in() || !cudnn_library().handle) GTEST_SKIP() << cudnn_library().error;
  auto selection = make_attention_engine(*backend, AttentionEngineChoice::cudnn);
  FusedAttention& fused = *selection.fused;
  const DType type = DType::bf16;
  AttentionShape s;
  s.batch = 2, s.seq = 256, s.heads = 8, s.kv_heads = 2, s.head_dim = 64, s.value_dim = 64;
  s.scale = 0.125f;
  const std::int64_t W = (s.heads + 2 * s.kv_heads) * s.head_dim, T = s.batch * s.seq;
  s.q_row = s.k_row = s.v_row = W;
  const auto qkv = random_rounded(static_cast<std::size_t>(T * W), 11, type);
  const auto d_o = random_rounded(static_cast<std::size_t>(T * s.heads * s.value_dim), 12, type);
  // The packed tensors the reference takes: column blocks of each row.
  const auto block = [&](std::int64_t col, std::int64_t width) {
    std::vector<float> out(static_cast<std::size_t>(T * width));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t c = 0; c < width; ++c) out[t * width + c] = qkv[t * W + col + c];
    return out;
  };
  const std::int64_t kq = s.heads * s.head_dim, kk = s.kv_heads * s.head_dim;
  const auto q = block(0, kq), k = block(kq, kk), v = block(kq + kk, kk);
  std::vector<float> o(d_o.size()), stats(static_cast<std::size_t>(s.batch * s.heads * s.seq)), dq(q.size()),
      dk(k.size()), dv(v.size());
  AttentionShape packed = s;
  packed.q_row = packed.k_row = packed.v_row = 0;
  attention_forward_reference(packed, q.data(), k.data(), v.data(), o.data(), stats.data());
  attention_backward_reference(packed, q.data(), k.data(), v.data(), o.data(), d_o.data(), dq.data(),
                               dk.data(), dv.data());
  const auto bits = encode(qkv, type), do_bits = encode(d_o, type);
  auto d_qkv = backend->allocate(bits.size() * 2), d_do = backend->allocate(do_bits.size() * 2);
  backend->copy_to_device(d_qkv, bits.data(), bits.size() * 2);
  backend->copy_to_device(d_do, do_bits.data(), do_bits.size() * 2);
  auto d_out = backend->allocate(o.size() * 2), d_stats = backend->allocate(stats.size() * 4);
  auto d_grad = backend->allocate(bits.size() * 2);
  const auto at = [&](DeviceBuffer& b, std::int64_t col) { return static_cast<char*>(b.data()) + col * 2; };
  fused.forward(s, type, at(d_qkv, 0), at(d_qkv, kq), at(d_qkv, kq + kk), d_out.data(), d_stats.as<float>(),
                nullptr);
  fused.backward(s, type, at(d_qkv, 0), at(d_qkv, kq), at(d_qkv, kq + kk), d_out.data(), d_do.data(),
                 d_stats.as<float>(), at(d_grad, 0), at(d_grad, kq), at(d_grad, kq + kk), nullptr);
  backend->synchronize();
  std::vector<std::uint16_t> out_bits(o.size()), grad_bits(bits.size());
  backend->copy_to_host(out_bits.data(), d_out, out_bits.size() * 2);
  backend->copy_to_host(grad_bits.data(), d_grad, grad_bits.size() * 2);
  const auto grad = decode(grad_bits, type);
  const auto grad_block = [&](std::int64_t col, std::int64_t width) {
    std::vector<float> out(static_cast<std::size_t>(T * width));
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t c = 0; c < width; ++c) out[t * width + c] = grad[t * W + col + c];
    return out;
  };
  EXPECT_LT(relative_error(decode(out_bits, type), o), 3e-2) << "o";
  EXPECT_LT(relative_error(grad_block(0, kq), dq), 3e-2) << "dq";
  EXPECT_LT(relative_error(grad_block(kq, kk), dk), 3e-2) << "dk";
  EXPECT_LT(relative_error(grad_block(kq + kk, kk), dv), 3e-2) << "dv";
}

// fp8 (Hopper: head dim 128): one pass with the bound scales, calibration, a second pass, on the GPU and
// through the host reference engine from the same fp8 inputs. The GPU's amax must be the reference's (the
// values before scaling: the recipe depends on it), and its outputs must pass the benchmark's check.
TEST(AttentionCudnnCuda, Fp8MatchesTheHostReferenceEngineAndItsAmax) {
  std::string reason;
  auto backend = gpu_test::cuda_backend(reason);
  if (!backend) GTEST_SKIP() << reason;
  if (!cudnn_attention_compiled_in() || !cudnn_library().handle) GTEST_SKIP() << cudnn_library().error;
  if (std::stod(backend->device().compute_capability) < 9.0) GTEST_SKIP() << "fp8 SDPA needs Hopper or later";
  auto selection = make_attention_engine(*backend, AttentionEngineChoice::cudnn);
  FusedAttention& gpu = *selection.fused;
  auto host = make_reference_attention();
  const DType type = DType::fp8_e4m3;
  using T = Fp8Tensor;
  for (const bool causal : {true, false}) {
    AttentionShape s;
    s.batch = 1, s.seq = 256, s.heads = 8, s.kv_heads = 2, s.head_dim = s.value_dim = 128;
    s.causal = causal;
    s.scale = 1.0f / std::sqrt(128.0f);
    std::string why;
    ASSERT_TRUE(gpu.supports(s, type, why)) << why;
    const std::size_t nq = s.seq * s.heads * 128, nk = s.seq * s.kv_heads * 128, ns = s.heads * s.seq;
    std::vector<std::uint8_t> q(nq), k(nk), v(nk), d_o(nq);
    fill_random_host(q.data(), nq, type, 21), fill_random_host(k.data(), nk, type, 22);
    fill_random_host(v.data(), nk, type, 23), fill_random_host(d_o.data(), nq, type, 24);
    auto upload = [&](const void* p, std::size_t bytes) {
      auto buf = backend->allocate(bytes);
      backend->copy_to_device(buf, p, bytes);
      return buf;
    };
    auto d_q = upload(q.data(), nq), d_k = upload(k.data(), nk), d_v = upload(v.data(), nk),
         d_do = upload(d_o.data(), nq);
    auto d_out = backend->allocate(nq), d_stats = backend->allocate(ns * 4), d_dq = backend->allocate(nq),
         d_dk = backend->allocate(nk), d_dv = backend->allocate(nk);
    std::vector<float> g_block = workloads::fp8_initial_scaling(s, 1.0), h_block = g_block;
    auto d_block = upload(g_block.data(), g_block.size() * 4);
    std::vector<std::uint8_t> h_o(nq), h_dq(nq), h_dk(nk), h_dv(nk);
    std::vector<float> h_stats(ns);
    for (int pass = 0; pass < 2; ++pass) {
      gpu.forward(s, type, d_q.data(), d_k.data(), d_v.data(), d_out.data(), d_stats.as<float>(),
                  d_block.as<float>());
      gpu.backward(s, type, d_q.data(), d_k.data(), d_v.data(), d_out.data(), d_do.data(),
                   d_stats.as<float>(), d_dq.data(), d_dk.data(), d_dv.data(), d_block.as<float>());
      host->forward(s, type, q.data(), k.data(), v.data(), h_o.data(), h_stats.data(), h_block.data());
      host->backward(s, type, q.data(), k.data(), v.data(), h_o.data(), d_o.data(), h_stats.data(),
                     h_dq.data(), h_dk.data(), h_dv.data(), h_block.data());
      backend->synchronize();
      backend->copy_to_host(g_block.data(), d_block, g_block.size() * 4);
      const std::string what = std::string(causal ? "causal" : "full") + " pass " + std::to_string(pass);
      for (const T t : {T::s, T::o, T::dp, T::dq, T::dk, T::dv}) {
        const float g = g_block[fp8_slot(t, Fp8Field::amax)], h = h_block[fp8_slot(t, Fp8Field::amax)];
        EXPECT_NEAR(g, h, 0.1 * h) << what << ": amax of fp8 tensor " << static_cast<int>(t);
      }
      if (pass == 0) {  // calibrate from the reference's amax, so both passes run at the same scales
        workloads::fp8_calibrate(h_block);
        for (const T t : {T::s, T::o, T::dp, T::dq, T::dk, T::dv})
          for (const Fp8Field f : {Fp8Field::scale, Fp8Field::descale})
            g_block[fp8_slot(t, f)] = h_block[fp8_slot(t, f)];
        backend->copy_to_device(d_block, g_block.data(), g_block.size() * 4);
      }
    }
    auto download = [&](const DeviceBuffer& buf, std::size_t n, T t) {
      std::vector<std::uint8_t> bits(n);
      backend->copy_to_host(bits.data(), buf, n);
      std::vector<float> out(n);
      for (std::size_t i = 0; i < n; ++i)
        out[i] = fp8_e4m3_to_float(bits[i]) * g_block[fp8_slot(t, Fp8Field::descale)];
      return out;
    };
    auto widen = [](const std::vector<std::uint8_t>& x) {
      std::vector<float> out(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) out[i] = fp8_e4m3_to_float(x[i]);
      return out;
    };
    workloads::AttentionTensors t;
    t.q = widen(q), t.k = widen(k), t.v = widen(v), t.d_o = widen(d_o);
    t.o = download(d_out, nq, T::o), t.dq = download(d_dq, nq, T::dq);
    t.dk = download(d_dk, nk, T::dk), t.dv = download(d_dv, nk, T::dv);
    t.stats.resize(ns);
    backend->copy_to_host(t.stats.data(), d_stats, ns * 4);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(s.seq));
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
    const auto check =
        workloads::check_attention_rows(s, t, rows, workloads::attention_tolerance(DType::fp8_e4m3));
    EXPECT_EQ(check.mismatches, 0u) << (causal ? "causal: " : "full: ") << check.detail;
    // dK and dV against the exact gradients from the same inputs (and the GPU's O, as its backward read).
    std::vector<float> dq(nq), dk(nk), dv(nk);
    attention_backward_reference(s, t.q.data(), t.k.data(), t.v.data(), t.o.data(), t.d_o.data(), dq.data(),
                                 dk.data(), dv.data());
    EXPECT_LT(relative_error(download(d_dk, nk, T::dk), dk), 0.15) << (causal ? "causal" : "full") << ": dk";
    EXPECT_LT(relative_error(download(d_dv, nk, T::dv), dv), 0.15) << (causal ? "causal" : "full") << ": dv";
  }
}

}  // namespace
}  // namespace fb::kernels
