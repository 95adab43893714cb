// The attention benchmark's arithmetic and check: Megatron's attention FLOPs against issue 15's figures and
// against the model FLOP count, and the sampled fp64 row check passing on the reference's own answer and
// naming what was corrupted otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/host_backend.hpp"
#include "core/mpi_context.hpp"
#include "core/random_fill.hpp"
#include "kernels/host/attention_reference.hpp"
#include "workloads/attention_benchmark.hpp"
#include "workloads/attention_check.hpp"
#include "workloads/attention_flops.hpp"
#include "workloads/model_config.hpp"
#include "workloads/model_flops.hpp"

using namespace fb;
using namespace fb::workloads;

namespace {

kernels::AttentionShape llama3_8b_layer(std::int64_t seq) {
  kernels::AttentionShape s;
  s.seq = seq, s.heads = 32, s.kv_heads = 8, s.head_dim = s.value_dim = 128;
  return s;
}

}  // namespace

TEST(AttentionFlops, Issue15Figures) {
  // 3 × (2 · 2 · s² · h) / 2 with h = 4096 at s 8192: 1.649 TFLOP per layer; cuDNN's 3.60 ms is 458 TFLOP/s.
  const auto f = attention_flops(llama3_8b_layer(8192));
  EXPECT_DOUBLE_EQ(f.forward, 2.0 * 2.0 * 8192.0 * 8192.0 * 4096.0 / 2.0);
  EXPECT_DOUBLE_EQ(f.backward, 2.0 * f.forward);
  EXPECT_DOUBLE_EQ(f.total(), 1649267441664.0);
  EXPECT_NEAR(f.total() / 3.60e-3 / 1e12, 458.1, 0.05);
  EXPECT_NEAR(f.total() / 14.6e-3 / 1e12, 113.0, 0.05);  // the blocked GEMMs' 14.6 ms
}

TEST(AttentionFlops, MaskBatchAndValueDim) {
  auto s = llama3_8b_layer(1024);
  const double causal = attention_flops(s).total();
  s.causal = false;
  EXPECT_DOUBLE_EQ(attention_flops(s).total(), 2 * causal);  // no mask: nothing halved
  s.batch = 3;
  EXPECT_DOUBLE_EQ(attention_flops(s).total(), 6 * causal);
  kernels::AttentionShape mla;  // DeepSeek-V3: q/k 128 + 64 rope, v 128, 128 heads
  mla.seq = 4096, mla.heads = mla.kv_heads = 128, mla.head_dim = 192, mla.value_dim = 128;
  EXPECT_DOUBLE_EQ(attention_flops(mla).forward, 2.0 * 4096.0 * 4096.0 * 128.0 * (192.0 + 128.0) / 2.0);
}

TEST(AttentionFlops, AgreesWithTheModelCount) {
  // Per layer and sequence, the model count's attention core (per token × seq / layers, deepseek-v3's MTP
  // layer included) is the same number.
  for (const char* name : {"llama3-8b", "deepseek-v3"}) {
    const auto m = load_model(name);
    const auto per_token = model_flops_per_token(m, m.seq, AttentionFlops::causal);
    kernels::AttentionShape s;
    s.seq = m.seq, s.heads = m.heads, s.kv_heads = m.mla ? m.heads : m.kv_heads;
    s.head_dim = m.mla ? m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim : m.head_dim;
    s.value_dim = m.mla ? m.mla->v_head_dim : m.head_dim;
    EXPECT_NEAR(
        attention_flops(s).total(),
        per_token.attention_core * static_cast<double>(m.seq) / static_cast<double>(m.layers + m.mtp_layers),
        1e-9 * attention_flops(s).total())
        << name;
  }
}

TEST(AttentionBenchmark, CaseNamesAndSetBytes) {
  auto s = llama3_8b_layer(8192);
  EXPECT_EQ(attention_case_name(s, DType::bf16), "bf16/b1/s8192/h32-kv8/d128");
  s.value_dim = 64, s.causal = false;
  EXPECT_EQ(attention_case_name(s, DType::fp32), "fp32/b1/s8192/h32-kv8/d128/v64/full");
  // q, o, d_o, dq: 4 × 8192 × 4096; k, v, dk, dv: 4 × 8192 × 1024; 2 bytes each; stats 8192 × 32 × 4.
  EXPECT_EQ(attention_set_bytes(llama3_8b_layer(8192), DType::bf16),
            (4ull * 8192 * 4096 + 4ull * 8192 * 1024) * 2 + 8192ull * 32 * 4);
}

TEST(AttentionCheckRows, FirstAndLastOfEverySequenceThenRandom) {
  auto s = llama3_8b_layer(100);
  s.batch = 2;
  const auto rows = attention_check_rows(s, 10, 7);
  ASSERT_EQ(rows.size(), 10u);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end());
  for (const std::int64_t r : {0, 99, 100, 199})
    EXPECT_NE(std::find(rows.begin(), rows.end(), r), rows.end()) << r;
  EXPECT_EQ(attention_check_rows(llama3_8b_layer(3), 16, 7).size(), 3u);  // never more rows than tokens
}

namespace {

// A small GQA shape run through the fp64 reference: the tensors the check reads.
struct Computed {
  kernels::AttentionShape s;
  AttentionTensors t;
};
Computed reference_run(bool causal) {
  Computed c;
  auto& s = c.s;
  s.batch = 2, s.seq = 24, s.heads = 4, s.kv_heads = 2, s.head_dim = 8, s.value_dim = 6, s.causal = causal;
  s.scale = 1.0f / std::sqrt(8.0f);
  const std::size_t nq = 48 * 4 * 8, nk = 48 * 2 * 8, nv = 48 * 2 * 6, no = 48 * 4 * 6;
  auto random = [](std::size_t n, std::uint64_t seed) {
    std::vector<float> v(n);
    fill_random_host(v.data(), n, DType::fp32, seed);
    return v;
  };
  auto& t = c.t;
  t.q = random(nq, 1), t.k = random(nk, 2), t.v = random(nv, 3), t.d_o = random(no, 4);
  t.o.resize(no), t.dq.resize(nq), t.stats.resize(2 * 4 * 24);
  t.dk.resize(nk), t.dv.resize(nv);
  kernels::attention_forward_reference(s, t.q.data(), t.k.data(), t.v.data(), t.o.data(), t.stats.data());
  kernels::attention_backward_reference(s, t.q.data(), t.k.data(), t.v.data(), t.o.data(), t.d_o.data(),
                                        t.dq.data(), t.dk.data(), t.dv.data());
  return c;
}

}  // namespace

TEST(AttentionCheckRows, PassesOnTheReferenceAnswer) {
  for (const bool causal : {true, false}) {
    const auto c = reference_run(causal);
    const auto rows = attention_check_rows(c.s, 48, 1);  // every row
    const auto check = check_attention_rows(c.s, c.t, rows, attention_tolerance(DType::fp32));
    EXPECT_EQ(check.rows, 48u);
    EXPECT_EQ(check.mismatches, 0u) << check.detail;
    EXPECT_LT(check.worst, 1e-2);  // fp32 rounding of fp64 answers, far under the fp32 tolerance
  }
}

TEST(AttentionCheckRows, NamesWhatIsWrong) {
  const auto base = reference_run(true);
  const std::vector<std::int64_t> rows{30};  // sequence 1, position 6
  struct Case {
    std::vector<float> AttentionTensors::*tensor;
    std::size_t index;
    const char* names;
    // The check recomputes the gradients from the stored O (D = dO·O) and statistics (P of the key rows):
    // a wrong output also shows in the query and key gradients, a wrong log-sum-exp in the key and value
    // gradients of the keys that query sees (token 30 is one).
    std::size_t mismatches;
  };
  // Row 30, head 3: o and dq at (30·4 + 3)·dim, stats at (b·heads + h)·seq + i = (1·4 + 3)·24 + 6; as a
  // key, KV head 1: dk and dv at (30·2 + 1)·dim.
  for (const Case& k : {Case{&AttentionTensors::o, (30 * 4 + 3) * 6 + 2, "output of token 30", 3},
                        Case{&AttentionTensors::stats, (1 * 4 + 3) * 24 + 6, "log-sum-exp of token 30", 3},
                        Case{&AttentionTensors::dq, (30 * 4 + 3) * 8 + 5, "query gradient of token 30", 1},
                        Case{&AttentionTensors::dk, (30 * 2 + 1) * 8 + 7, "key gradient of token 30", 1},
                        Case{&AttentionTensors::dv, (30 * 2 + 1) * 6 + 0, "value gradient of token 30", 1}}) {
    auto c = base;
    (c.t.*k.tensor)[k.index] += 0.5f;
    const auto check = check_attention_rows(c.s, c.t, rows, attention_tolerance(DType::bf16));
    EXPECT_EQ(check.mismatches, k.mismatches) << k.names;
    EXPECT_NE(check.detail.find(k.names), std::string::npos) << check.detail;
    const bool key = k.tensor == &AttentionTensors::dk || k.tensor == &AttentionTensors::dv;
    EXPECT_NE(check.detail.find(key ? "KV head 1" : "), head 3"), std::string::npos) << check.detail;
    EXPECT_GT(check.worst, 1.0);
  }
  auto c = base;
  c.t.o[(30 * 4 + 1) * 6] = std::nanf("");
  EXPECT_EQ(check_attention_rows(c.s, c.t, rows, 1.0).mismatches, 1u);  // NaN fails any tolerance
}

TEST(AttentionBenchmark, HostRunChecksAndFailsWhenTheOutputIsCorrupted) {
  static MpiContext mpi(nullptr, nullptr);  // a world of one process (MPI singleton)
  HostBackend backend(1);
  DevicePeak peak;
  peak.tflops["fp32"] = 1.0;
  peak.source = "test";
  AttentionCase c;
  c.shape.seq = 40, c.shape.heads = 4, c.shape.kv_heads = 2, c.shape.head_dim = c.shape.value_dim = 16;
  c.shape.scale = 0.25f;
  c.dtype = DType::fp32;
  c.name = attention_case_name(c.shape, c.dtype);
  const std::vector<AttentionCase> cases{c};
  AttentionRunOptions o;
  o.iters = 3, o.warmup = 1;
  const auto clean = run_attention_benchmark(mpi, backend, peak, cases, o);
  ASSERT_EQ(clean.results.size(), 1u);
  const auto& r = clean.results[0];
  EXPECT_EQ(r.status, reports::Status::ok) << r.error.value_or("");
  EXPECT_EQ(clean.engine, "reference");
  EXPECT_EQ(r.benchmark, "attention");
  EXPECT_EQ(r.metric("tflops")->stats->n, 3u);
  EXPECT_GT(r.metric("forward_tflops")->value, 0.0);
  EXPECT_GT(r.metric("backward_time_us")->value, 0.0);
  EXPECT_DOUBLE_EQ(r.params["flops_forward"].get<double>(), attention_flops(c.shape).forward);
  EXPECT_EQ(r.extra["check"]["rows"], 16);
  EXPECT_LT(r.extra["check"]["worst_error_ratio"].get<double>(), 1.0);

  // The hook changes the first token's output (token 0 is always checked): the result fails and says why.
  o.after_run_hook = [](Backend&, DeviceBuffer& out, const kernels::AttentionShape&, DType) {
    out.as<float>()[3] += 1.0f;
  };
  const auto bad = run_attention_benchmark(mpi, backend, peak, cases, o);
  EXPECT_EQ(bad.results[0].status, reports::Status::failed);
  EXPECT_NE(bad.results[0].error.value_or("").find("output of token 0"), std::string::npos)
      << bad.results[0].error.value_or("");
  EXPECT_EQ(bad.summary["failed"], 1);

  // gemm is the step's own attention: a usage error naming where it is timed.
  o.engine = kernels::AttentionEngineChoice::gemm;
  EXPECT_THROW(run_attention_benchmark(mpi, backend, peak, cases, o), Error);
}

// The benchmark's engine against a backend kind, in its own option's words: auto is cudnn on cuda and the
// reference on the host; a suite's preflight and the command alone say this before a shape is built.
TEST(AttentionBenchmark, EngineUnsupportedOnABackendKind) {
  using enum kernels::AttentionEngineChoice;
  EXPECT_EQ(benchmark_attention_unsupported(BackendKind::host, cudnn),
            "--engine cudnn: cuDNN attention needs the cuda backend");
  EXPECT_EQ(benchmark_attention_unsupported(BackendKind::cuda, reference),
            "--engine reference runs on the host backend only");
  EXPECT_EQ(benchmark_attention_unsupported(BackendKind::host, automatic), "");
  EXPECT_EQ(benchmark_attention_unsupported(BackendKind::host, reference), "");
  EXPECT_EQ(benchmark_attention_unsupported(BackendKind::cuda, automatic),
            benchmark_attention_unsupported(BackendKind::cuda, cudnn));
}
