// The host reference attention (kernels/host/attention_reference.cpp) on answers known in closed form and
// against finite differences, and the attention engine choice on a host backend
// (kernels/attention_engine.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/cudnn_library.hpp"
#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "kernels/attention_engine.hpp"
#include "kernels/host/attention_reference.hpp"

namespace fb::kernels {
namespace {

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> x(n);
  for (auto& e : x) e = static_cast<float>(rng.uniform() * 2.0 - 1.0);
  return x;
}

AttentionShape shape(std::int64_t seq, std::int64_t heads, std::int64_t kv_heads, std::int64_t d,
                     bool causal) {
  AttentionShape s;
  s.batch = 2, s.seq = seq, s.heads = heads, s.kv_heads = kv_heads, s.head_dim = d, s.value_dim = d;
  s.causal = causal;
  s.scale = 1.0f / std::sqrt(static_cast<float>(d));
  return s;
}

TEST(AttentionReference, ZeroQueriesAverageTheVisibleValues) {
  // q = 0 gives equal scores: causal query i outputs the mean of v_0..v_i and its log-sum-exp is log(i+1);
  // without the mask every query outputs the mean of all values and log(seq).
  for (const bool causal : {true, false}) {
    const auto s = shape(5, 2, 1, 3, causal);
    std::vector<float> q(2 * 5 * 2 * 3, 0.0f), k = random_values(2 * 5 * 3, 1), v(2 * 5 * 3), o(q.size()),
                                               st(2 * 2 * 5);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);  // v[b][t][d] = (b·5 + t)·3 + d
    attention_forward_reference(s, q.data(), k.data(), v.data(), o.data(), st.data());
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 5; ++t)
        for (int h = 0; h < 2; ++h)
          for (int d = 0; d < 3; ++d) {
            const int last = causal ? t : 4;  // mean over tokens 0..last of (b·5 + j)·3 + d
            const double mean = (b * 5 + last / 2.0) * 3 + d;
            EXPECT_NEAR(o[((b * 5 + t) * 2 + h) * 3 + d], mean, 1e-5);
            EXPECT_NEAR(st[(b * 2 + h) * 5 + t], std::log(last + 1.0), 1e-6);
          }
  }
}

TEST(AttentionReference, OneKeyPassesItsValueThrough) {
  // The first causal query sees only key 0: o = v_0 and the log-sum-exp is its own score scale·q·k.
  const auto s = shape(4, 4, 2, 8, true);
  const auto q = random_values(2 * 4 * 4 * 8, 2), k = random_values(2 * 4 * 2 * 8, 3),
             v = random_values(2 * 4 * 2 * 8, 4);
  std::vector<float> o(q.size()), st(2 * 4 * 4);
  attention_forward_reference(s, q.data(), k.data(), v.data(), o.data(), st.data());
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 4; ++h) {
      const int g = h / 2;  // grouped-query: heads 0,1 read kv head 0; heads 2,3 kv head 1
      double score = 0;
      for (int d = 0; d < 8; ++d) {
        EXPECT_FLOAT_EQ(o[((b * 4) * 4 + h) * 8 + d], v[((b * 4) * 2 + g) * 8 + d]);
        score += q[((b * 4) * 4 + h) * 8 + d] * k[((b * 4) * 2 + g) * 8 + d];
      }
      EXPECT_NEAR(st[(b * 4 + h) * 4], s.scale * score, 1e-6);
    }
}

TEST(AttentionReference, GradientsMatchFiniteDifferences) {
  // L = Σ o ⊙ w for fixed random w, so dO = w; each gradient entry against a central difference of L.
  for (const bool causal : {true, false}) {
    auto s = shape(6, 4, 2, 4, causal);
    s.value_dim = 3;  // a value width unlike the key width (as MLA)
    auto q = random_values(2 * 6 * 4 * 4, 5), k = random_values(2 * 6 * 2 * 4, 6),
         v = random_values(2 * 6 * 2 * 3, 7);
    const auto w = random_values(2 * 6 * 4 * 3, 8);
    std::vector<float> o(w.size()), dq(q.size()), dk(k.size()), dv(v.size());
    attention_forward_reference(s, q.data(), k.data(), v.data(), o.data(), nullptr);
    attention_backward_reference(s, q.data(), k.data(), v.data(), o.data(), w.data(), dq.data(), dk.data(),
                                 dv.data());
    auto loss = [&] {
      std::vector<float> out(w.size());
      attention_forward_reference(s, q.data(), k.data(), v.data(), out.data(), nullptr);
      double l = 0;
      for (std::size_t i = 0; i < w.size(); ++i) l += static_cast<double>(out[i]) * w[i];
      return l;
    };
    auto check = [&](std::vector<float>& x, const std::vector<float>& grad, const char* name) {
      for (std::size_t i = 0; i < x.size(); i += 7) {
        const float keep = x[i], h = 1e-2f;
        x[i] = keep + h;
        const double up = loss();
        x[i] = keep - h;
        const double down = loss();
        x[i] = keep;
        EXPECT_NEAR(grad[i], (up - down) / (2.0 * h), 2e-3) << name << "[" << i << "] causal " << causal;
      }
    };
    check(q, dq, "dq");
    check(k, dk, "dk");
    check(v, dv, "dv");
  }
}

TEST(AttentionReference, RejectsInconsistentShapes) {
  auto s = shape(4, 6, 4, 8, true);
  std::vector<float> x(1024);
  EXPECT_THROW(attention_forward_reference(s, x.data(), x.data(), x.data(), x.data(), nullptr), Error);
  s = shape(0, 4, 4, 8, true);
  EXPECT_THROW(attention_forward_reference(s, x.data(), x.data(), x.data(), x.data(), nullptr), Error);
}

TEST(AttentionEngine, ChoiceOnAHostBackend) {
  EXPECT_EQ(parse_attention_engine_choice("auto"), AttentionEngineChoice::automatic);
  EXPECT_EQ(parse_attention_engine_choice("cudnn"), AttentionEngineChoice::cudnn);
  EXPECT_EQ(parse_attention_engine_choice("gemm"), AttentionEngineChoice::gemm);
  EXPECT_THROW(parse_attention_engine_choice("flash"), Error);
  auto backend = make_backend(BackendChoice::host, 0, 1);
  auto gemm = make_attention_engine(*backend, AttentionEngineChoice::gemm);
  EXPECT_EQ(gemm.engine, "gemm");
  EXPECT_EQ(gemm.notice, "");
  EXPECT_EQ(gemm.fused, nullptr);
  // auto falls back with one line saying why; an explicit cudnn cannot be honoured here.
  auto automatic = make_attention_engine(*backend, AttentionEngineChoice::automatic);
  EXPECT_EQ(automatic.engine, "gemm");
  EXPECT_EQ(automatic.fused, nullptr);
  EXPECT_NE(automatic.notice.find("attention engine: gemm ("), std::string::npos) << automatic.notice;
  EXPECT_EQ(automatic.notice.find('\n'), std::string::npos);
  try {
    make_attention_engine(*backend, AttentionEngineChoice::cudnn);
    ADD_FAILURE() << "cudnn on a host backend must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--attention-engine cudnn: "), std::string::npos) << e.what();
  }
}

// What a check before the run says (a suite's preflight, train before its plan): the words the engine
// factory throws, and nothing where the engine may run.
TEST(AttentionEngine, UnsupportedOnABackendKind) {
  using enum AttentionEngineChoice;
  const std::string cudnn_on_host = "--attention-engine cudnn: cuDNN attention needs the cuda backend";
  EXPECT_EQ(attention_engine_unsupported(BackendKind::host, cudnn), cudnn_on_host);
  EXPECT_EQ(attention_engine_unsupported(BackendKind::cuda, reference),
            "--attention-engine reference runs on the host backend only");
  EXPECT_EQ(attention_engine_unsupported(BackendKind::cuda, cudnn),
            cudnn_attention_compiled_in()
                ? ""
                : "--attention-engine cudnn: this build has no cuDNN attention engine (FACTORYBENCH_CUDNN)");
  for (const auto kind : {BackendKind::host, BackendKind::cuda})
    for (const auto choice : {automatic, gemm})
      EXPECT_EQ(attention_engine_unsupported(kind, choice), "") << to_string(choice);
  EXPECT_EQ(attention_engine_unsupported(BackendKind::host, reference), "");
  auto backend = make_backend(BackendChoice::host, 0, 1);
  try {
    make_attention_engine(*backend, cudnn);
    ADD_FAILURE() << "cudnn on a host backend must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.what(), cudnn_on_host);
  }
}

}  // namespace
}  // namespace fb::kernels
