// Causal attention forward + backward through the fused engine (kernels/attention_engine.hpp) at one layer's
// shape, in TFLOP/s counted as Megatron counts attention: 3 × (2 · 2 · s² · h) / 2 per sequence for causal
// (two s×s×h GEMMs forward, twice that backward, half of it under the mask; h = heads × head_dim). Issue 15
// target: ≥ 400 TFLOP/s at Llama 3 8B's shape (32 heads, 8 KV heads, d 128) and seq 8192 on an H200.
//   build/<dir>/bench/attention_bench [--seq N] [--heads N] [--kv-heads N] [--dim N] [--batch N] [--iters N]
// Needs the cuda backend, a GPU and cuDNN: elsewhere it says so and exits 77 (skipped).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "kernels/attention_engine.hpp"

int main(int argc, char** argv) {
  std::map<std::string, long long> opt{{"--seq", 8192}, {"--heads", 32}, {"--kv-heads", 8},
                                       {"--dim", 128},  {"--batch", 1},  {"--iters", 20}};
  for (int i = 1; i < argc; ++i) {
    auto it = opt.find(argv[i]);
    if (it == opt.end() || i + 1 >= argc || std::atoll(argv[i + 1]) <= 0) {
      std::fprintf(stderr,
                   "attention_bench: bad argument '%s' (options: --seq --heads --kv-heads --dim --batch "
                   "--iters, each a positive integer)\n",
                   argv[i]);
      return 2;
    }
    it->second = std::atoll(argv[++i]);
  }
  std::unique_ptr<fb::Backend> backend;
  fb::kernels::AttentionEngineSelection engine;
  fb::kernels::AttentionShape s;
  s.batch = opt["--batch"], s.seq = opt["--seq"], s.heads = opt["--heads"], s.kv_heads = opt["--kv-heads"];
  s.head_dim = s.value_dim = opt["--dim"];
  s.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  try {
    fb::kernels::check_attention_shape(s);
    backend = fb::make_backend(fb::BackendChoice::cuda, 0, 1);
    engine = fb::kernels::make_attention_engine(*backend, fb::kernels::AttentionEngineChoice::cudnn, &s,
                                                fb::DType::bf16);
  } catch (const fb::Error& e) {
    if (e.kind() == fb::ErrorKind::usage) {
      std::fprintf(stderr, "attention_bench: %s\n", e.what());
      return 2;
    }
    std::printf("attention_bench: needs a GPU and cuDNN; skipped (%s)\n", e.what());
    return 77;
  }
  try {
    fb::Backend& b = *backend;
    const std::size_t nq = s.batch * s.seq * s.heads * s.head_dim * 2,
                      nk = s.batch * s.seq * s.kv_heads * s.head_dim * 2;
    auto q = b.allocate(nq), k = b.allocate(nk), v = b.allocate(nk), o = b.allocate(nq), d_o = b.allocate(nq);
    auto dq = b.allocate(nq), dk = b.allocate(nk), dv = b.allocate(nk);
    auto stats = b.allocate(s.batch * s.heads * s.seq * 4);
    std::uint64_t seed = 1;
    for (auto* buf : {&q, &k, &v, &d_o}) b.fill_random(*buf, fb::DType::bf16, seed++);
    auto& f = *engine.fused;
    auto fwd = [&] {
      f.forward(s, fb::DType::bf16, q.data(), k.data(), v.data(), o.data(), stats.as<float>());
    };
    auto bwd = [&] {
      f.backward(s, fb::DType::bf16, q.data(), k.data(), v.data(), o.data(), d_o.data(), stats.as<float>(),
                 dq.data(), dk.data(), dv.data());
    };
    const int iters = static_cast<int>(opt["--iters"]);
    auto time = [&](auto&& work) {
      for (int i = 0; i < 3; ++i) work();
      auto t = b.make_timer();
      t->start();
      for (int i = 0; i < iters; ++i) work();
      t->stop();
      return t->seconds() / iters;
    };
    const double t_fwd = time(fwd), t_bwd = time(bwd);
    const double h = static_cast<double>(s.heads * s.head_dim), seq = static_cast<double>(s.seq);
    const double flops = s.batch * 3.0 * (2.0 * 2.0 * seq * seq * h) / 2.0;
    std::printf(
        "attention cudnn bf16 causal b%lld s%lld heads %lld/%lld d%lld: fwd %.3f ms, bwd %.3f ms, fwd+bwd "
        "%.3f ms, %.1f TFLOP/s (Megatron count)\n",
        static_cast<long long>(s.batch), static_cast<long long>(s.seq), static_cast<long long>(s.heads),
        static_cast<long long>(s.kv_heads), static_cast<long long>(s.head_dim), t_fwd * 1e3, t_bwd * 1e3,
        (t_fwd + t_bwd) * 1e3, flops / (t_fwd + t_bwd) / 1e12);
  } catch (const fb::Error& e) {
    std::fprintf(stderr, "attention_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
