// fp8 attention on a host: the scaling recipe (workloads/attention_fp8_scaling.cpp) on worked values and
// against the magnitudes the reference actually reaches, the reference engine in fp8_e4m3
// (kernels/host/attention_reference_engine.cpp) against the exact answer, the check catching a scale that
// saturates, and the benchmark's fp8 run end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/element_access.hpp"
#include "core/error.hpp"
#include "core/host_backend.hpp"
#include "core/mpi_context.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/attention_engine.hpp"
#include "kernels/host/attention_reference.hpp"
#include "workloads/attention_benchmark.hpp"
#include "workloads/attention_check.hpp"
#include "workloads/attention_fp8_scaling.hpp"

using namespace fb;
using namespace fb::workloads;
using kernels::Fp8Field;
using kernels::Fp8Tensor;

namespace {

float slot(const std::vector<float>& block, Fp8Tensor t, Fp8Field f) {
  return block[kernels::fp8_slot(t, f)];
}

kernels::AttentionShape small_shape() {
  kernels::AttentionShape s;
  s.batch = 2, s.seq = 24, s.heads = 4, s.kv_heads = 2, s.head_dim = 16, s.value_dim = 16;
  s.scale = 0.25f;
  return s;
}

// fp8 inputs as the benchmark makes them: fill_random's ±[1/16, 1], exactly representable in e4m3.
std::vector<std::uint8_t> fp8_values(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint8_t> x(n);
  fill_random_host(x.data(), n, DType::fp8_e4m3, seed);
  return x;
}
std::vector<float> widen(const std::vector<std::uint8_t>& x, float descale = 1) {
  std::vector<float> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = fp8_e4m3_to_float(x[i]) * descale;
  return out;
}
float amax(const std::vector<float>& x) {
  float m = 0;
  for (const float e : x) m = std::max(m, std::abs(e));
  return m;
}

// One fp8 forward and backward through the reference engine, and the exact fp64 answer from the same
// inputs, packed as the check takes them.
struct Fp8Run {
  kernels::AttentionShape s;
  std::vector<std::uint8_t> q, k, v, d_o, o, dq, dk, dv;
  std::vector<float> stats, block;
  AttentionTensors exact;  // q, k, v, d_o the inputs; o, dq, stats the exact answer
  std::vector<float> exact_dk, exact_dv;
};

Fp8Run fp8_run(const kernels::AttentionShape& s, std::vector<float> block, bool calibrate) {
  Fp8Run r;
  r.s = s;
  const std::size_t tq = s.batch * s.seq * s.heads, tk = s.batch * s.seq * s.kv_heads;
  r.q = fp8_values(tq * s.head_dim, 1), r.k = fp8_values(tk * s.head_dim, 2);
  r.v = fp8_values(tk * s.value_dim, 3), r.d_o = fp8_values(tq * s.value_dim, 4);
  r.o.resize(tq * s.value_dim), r.dq.resize(r.q.size()), r.dk.resize(r.k.size()), r.dv.resize(r.v.size());
  r.stats.resize(s.batch * s.heads * s.seq);
  auto engine = kernels::make_reference_attention();
  auto pass = [&] {
    engine->forward(s, DType::fp8_e4m3, r.q.data(), r.k.data(), r.v.data(), r.o.data(), r.stats.data(),
                    block.data());
    engine->backward(s, DType::fp8_e4m3, r.q.data(), r.k.data(), r.v.data(), r.o.data(), r.d_o.data(),
                     r.stats.data(), r.dq.data(), r.dk.data(), r.dv.data(), block.data());
  };
  pass();
  if (calibrate) {
    fp8_calibrate(block);
    pass();
  }
  r.block = block;
  auto& e = r.exact;
  e.q = widen(r.q), e.k = widen(r.k), e.v = widen(r.v), e.d_o = widen(r.d_o);
  e.o.resize(r.o.size()), e.stats.resize(r.stats.size()), e.dq.resize(r.q.size());
  r.exact_dk.resize(r.k.size()), r.exact_dv.resize(r.v.size());
  kernels::attention_forward_reference(s, e.q.data(), e.k.data(), e.v.data(), e.o.data(), e.stats.data());
  kernels::attention_backward_reference(s, e.q.data(), e.k.data(), e.v.data(), e.o.data(), e.d_o.data(),
                                        e.dq.data(), r.exact_dk.data(), r.exact_dv.data());
  return r;
}

// What the engine wrote, dequantised, in the check's form.
AttentionTensors engine_tensors(const Fp8Run& r) {
  AttentionTensors t = r.exact;
  t.o = widen(r.o, slot(r.block, Fp8Tensor::o, Fp8Field::descale));
  t.dq = widen(r.dq, slot(r.block, Fp8Tensor::dq, Fp8Field::descale));
  t.dk = widen(r.dk, slot(r.block, Fp8Tensor::dk, Fp8Field::descale));
  t.dv = widen(r.dv, slot(r.block, Fp8Tensor::dv, Fp8Field::descale));
  t.stats = r.stats;
  return t;
}

std::vector<std::int64_t> every_row(const kernels::AttentionShape& s) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(s.batch * s.seq));
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  return rows;
}

}  // namespace

TEST(Fp8AttentionScaling, PowerOfTwoScalesThatNeverOverflow) {
  EXPECT_EQ(fp8_scale_for_amax(1.0), 256.0f);  // 448 / 1 → 2^8
  EXPECT_EQ(fp8_scale_for_amax(448.0), 1.0f);
  EXPECT_EQ(fp8_scale_for_amax(449.0), 0.5f);
  EXPECT_EQ(fp8_scale_for_amax(224.0), 2.0f);       // exactly 448 after scaling: still representable
  EXPECT_EQ(fp8_scale_for_amax(0.001), 262144.0f);  // 448 000 → 2^18
  EXPECT_EQ(fp8_scale_for_amax(0.0), 1.0f);
  EXPECT_EQ(fp8_scale_for_amax(-3.0), 1.0f);
  EXPECT_EQ(fp8_scale_for_amax(std::nan("")), 1.0f);
  EXPECT_EQ(fp8_scale_for_amax(std::numeric_limits<double>::infinity()), 1.0f);
  SplitMix64 rng(9);
  for (int i = 0; i < 2000; ++i) {
    const double amax = std::exp2(rng.uniform() * 60 - 30);
    const float scale = fp8_scale_for_amax(amax);
    int exponent = 0;
    EXPECT_EQ(std::frexp(scale, &exponent), 0.5f) << amax;  // a power of two: descale is exact
    EXPECT_LE(amax * scale, 448.0) << amax;
    EXPECT_GT(2 * amax * scale, 448.0) << amax;  // and the largest such
  }
}

TEST(Fp8AttentionScaling, BoundsAndTheInitialBlock) {
  // Llama 3 8B's layer: d 128, 4 query heads per KV head, scale 1/sqrt(128).
  kernels::AttentionShape s;
  s.seq = 8192, s.heads = 32, s.kv_heads = 8, s.head_dim = s.value_dim = 128;
  s.scale = 1.0f / std::sqrt(128.0f);
  const auto b = fp8_attention_bounds(s, 1.0);
  auto at = [&](Fp8Tensor t) { return b[static_cast<std::size_t>(t)]; };
  const double dp = s.scale * 2.0 * 128;  // 22.63
  EXPECT_EQ(at(Fp8Tensor::q), 0.0);
  EXPECT_EQ(at(Fp8Tensor::s), 1.0);
  EXPECT_EQ(at(Fp8Tensor::o), 1.0);
  EXPECT_NEAR(at(Fp8Tensor::dp), dp, 1e-5);
  EXPECT_NEAR(at(Fp8Tensor::dq), dp, 1e-5);
  EXPECT_NEAR(at(Fp8Tensor::dk), 4 * 8192 * dp, 1e-1);
  EXPECT_EQ(at(Fp8Tensor::dv), 4.0 * 8192);
  EXPECT_NEAR(fp8_attention_bounds(s, 0.5)[static_cast<std::size_t>(Fp8Tensor::dq)], dp / 8, 1e-5);

  const auto block = fp8_initial_scaling(s, 1.0);
  ASSERT_EQ(block.size(), kernels::kFp8ScalingFloats);
  for (const Fp8Tensor t : {Fp8Tensor::q, Fp8Tensor::k, Fp8Tensor::v, Fp8Tensor::d_o}) {
    EXPECT_EQ(slot(block, t, Fp8Field::scale), 1.0f);
    EXPECT_EQ(slot(block, t, Fp8Field::descale), 1.0f);
  }
  EXPECT_EQ(slot(block, Fp8Tensor::s, Fp8Field::scale), 256.0f);
  EXPECT_EQ(slot(block, Fp8Tensor::s, Fp8Field::descale), 1.0f / 256);
  EXPECT_EQ(slot(block, Fp8Tensor::dp, Fp8Field::scale), 16.0f);       // 448 / 22.6 = 19.8 → 16
  EXPECT_EQ(slot(block, Fp8Tensor::dv, Fp8Field::scale), 1.0f / 128);  // 448 / 32768 → 2^-7
  for (std::size_t t = 0; t < static_cast<std::size_t>(Fp8Tensor::count); ++t)
    EXPECT_EQ(slot(block, static_cast<Fp8Tensor>(t), Fp8Field::amax), 0.0f);
  // Every value is 16 bytes from the next, as cuDNN wants a tensor's address aligned.
  EXPECT_EQ(kernels::fp8_slot(Fp8Tensor::q, Fp8Field::descale) * sizeof(float), 16u);
}

TEST(Fp8AttentionScaling, CalibrationTakesTheScaleOfEachAmax) {
  auto block = fp8_initial_scaling(small_shape(), 1.0);
  block[kernels::fp8_slot(Fp8Tensor::dq, Fp8Field::amax)] = 0.3f;
  block[kernels::fp8_slot(Fp8Tensor::o, Fp8Field::amax)] = 0.0f;   // nothing measured: left as it was
  block[kernels::fp8_slot(Fp8Tensor::q, Fp8Field::amax)] = 0.01f;  // an input: never rescaled
  const auto before = block;
  fp8_calibrate(block);
  EXPECT_EQ(slot(block, Fp8Tensor::dq, Fp8Field::scale), 1024.0f);  // 448 / 0.3 = 1493 → 2^10
  EXPECT_EQ(slot(block, Fp8Tensor::dq, Fp8Field::descale), 1.0f / 1024);
  EXPECT_EQ(slot(block, Fp8Tensor::o, Fp8Field::scale), slot(before, Fp8Tensor::o, Fp8Field::scale));
  EXPECT_EQ(slot(block, Fp8Tensor::q, Fp8Field::scale), 1.0f);
}

TEST(Fp8AttentionReference, BoundsHoldAndCalibratedOutputsMatchTheExactAnswer) {
  for (const bool causal : {true, false}) {
    auto s = small_shape();
    s.causal = causal;
    const auto r = fp8_run(s, fp8_initial_scaling(s, 1.0), true);
    // The amax the calibration pass measured are within the bounds its scales came from.
    const auto bounds = fp8_attention_bounds(s, 1.0);
    for (const Fp8Tensor t :
         {Fp8Tensor::s, Fp8Tensor::o, Fp8Tensor::dp, Fp8Tensor::dq, Fp8Tensor::dk, Fp8Tensor::dv}) {
      const float a = slot(r.block, t, Fp8Field::amax);
      EXPECT_GT(a, 0.0f);
      EXPECT_LE(a, bounds[static_cast<std::size_t>(t)]);
    }
    // Amax are of the values before scaling: the largest P is the exact one (1 where a query sees only
    // itself), and |O|'s is the exact output's within fp8's rounding of P.
    EXPECT_EQ(slot(r.block, Fp8Tensor::s, Fp8Field::amax),
              causal ? 1.0f : slot(r.block, Fp8Tensor::s, Fp8Field::amax));
    EXPECT_NEAR(slot(r.block, Fp8Tensor::o, Fp8Field::amax), amax(r.exact.o), 0.07 * amax(r.exact.o));
    EXPECT_NEAR(slot(r.block, Fp8Tensor::dk, Fp8Field::amax), amax(r.exact_dk), 0.1 * amax(r.exact_dk));
    EXPECT_NEAR(slot(r.block, Fp8Tensor::dv, Fp8Field::amax), amax(r.exact_dv), 0.1 * amax(r.exact_dv));
    // Every row passes the benchmark's check at the fp8 tolerance, with room to spare.
    const auto check =
        check_attention_rows(s, engine_tensors(r), every_row(s), attention_tolerance(DType::fp8_e4m3));
    EXPECT_EQ(check.mismatches, 0u) << check.detail;
    EXPECT_LT(check.worst, 0.7);
    // dK and dV (not sampled by the check) are as close, relative to each tensor's largest value.
    auto rel = [](const std::vector<float>& got, const std::vector<float>& want) {
      double e = 0;
      for (std::size_t i = 0; i < want.size(); ++i) e = std::max(e, std::abs(double(got[i]) - want[i]));
      return e / amax(want);
    };
    EXPECT_LT(rel(widen(r.dk, slot(r.block, Fp8Tensor::dk, Fp8Field::descale)), r.exact_dk), 0.15);
    EXPECT_LT(rel(widen(r.dv, slot(r.block, Fp8Tensor::dv, Fp8Field::descale)), r.exact_dv), 0.15);
  }
}

TEST(Fp8AttentionReference, TheCheckCatchesAScaleThatSaturates) {
  const auto s = small_shape();
  // Uncalibrated, the bound scales are safe but coarse: the pass still checks.
  const auto safe = fp8_run(s, fp8_initial_scaling(s, 1.0), false);
  EXPECT_EQ(check_attention_rows(s, engine_tensors(safe), every_row(s), attention_tolerance(DType::fp8_e4m3))
                .mismatches,
            0u);
  // O written at 16× its scale saturates at 448 (e4m3 has no infinity): the check names the output.
  auto block = fp8_initial_scaling(s, 1.0);
  block[kernels::fp8_slot(Fp8Tensor::o, Fp8Field::scale)] *= 16;
  block[kernels::fp8_slot(Fp8Tensor::o, Fp8Field::descale)] /= 16;
  const auto bad = fp8_run(s, block, false);
  const auto check =
      check_attention_rows(s, engine_tensors(bad), every_row(s), attention_tolerance(DType::fp8_e4m3));
  EXPECT_GT(check.mismatches, 0u);
  EXPECT_NE(check.detail.find("output of token"), std::string::npos) << check.detail;
}

TEST(Fp8AttentionReference, TheScalingBlockGoesWithFp8Only) {
  const auto s = small_shape();
  auto engine = kernels::make_reference_attention();
  std::string reason;
  EXPECT_TRUE(engine->supports(s, DType::fp8_e4m3, reason));
  EXPECT_FALSE(engine->supports(s, DType::fp8_e5m2, reason));
  EXPECT_NE(reason.find("fp8_e4m3"), std::string::npos) << reason;
  std::vector<std::uint8_t> x(4096);
  std::vector<float> stats(4096), block(kernels::kFp8ScalingFloats, 1.0f);
  EXPECT_THROW(
      engine->forward(s, DType::fp8_e4m3, x.data(), x.data(), x.data(), x.data(), stats.data(), nullptr),
      Error);
  EXPECT_THROW(
      engine->forward(s, DType::bf16, x.data(), x.data(), x.data(), x.data(), stats.data(), block.data()),
      Error);
}

TEST(Fp8AttentionBenchmark, HostRunCalibratesChecksAndReportsTheScales) {
  static MpiContext mpi(nullptr, nullptr);
  HostBackend backend(1);
  DevicePeak peak;
  peak.tflops["fp8_e4m3"] = 2.0;
  peak.source = "test";
  AttentionCase c;
  c.shape = small_shape();
  c.dtype = DType::fp8_e4m3;
  c.name = attention_case_name(c.shape, c.dtype);
  EXPECT_EQ(c.name, "fp8_e4m3/b2/s24/h4-kv2/d16");
  const std::vector<AttentionCase> cases{c};
  AttentionRunOptions o;
  o.iters = 2, o.warmup = 1;
  const auto run = run_attention_benchmark(mpi, backend, peak, cases, o);
  ASSERT_EQ(run.results.size(), 1u);
  const auto& r = run.results[0];
  EXPECT_EQ(r.status, reports::Status::ok) << r.error.value_or("");
  EXPECT_EQ(r.params["dtype"], "fp8_e4m3");
  EXPECT_EQ(r.params["fp8_scaling"], "per-tensor, power-of-two, delayed: one calibration pass");
  EXPECT_DOUBLE_EQ(r.extra["check"]["tolerance"].get<double>(), 0.15);
  EXPECT_LT(r.extra["check"]["worst_error_ratio"].get<double>(), 1.0);
  const auto& f = r.extra["fp8_scaling"];
  EXPECT_EQ(f["q"]["scale"], 1.0);
  EXPECT_EQ(f["s"]["scale"], 256.0);  // causal: the first query sees only itself, P = 1
  EXPECT_EQ(f["s"]["amax"], 1.0);
  // Calibrated: each produced tensor's scale is the one its measured amax asks for.
  for (const char* t : {"o", "dp", "dq", "dk", "dv"})
    EXPECT_EQ(f[t]["scale"].get<float>(), fp8_scale_for_amax(f[t]["amax"].get<double>())) << t;
  EXPECT_NE(r.metric("mfu"), nullptr);

  // A corrupted output fails the check, as in the other types.
  o.after_run_hook = [](Backend&, DeviceBuffer& out, const kernels::AttentionShape&, DType) {
    static_cast<std::uint8_t*>(out.data())[2] ^= 0x40;  // flips the exponent's top bit
  };
  const auto bad = run_attention_benchmark(mpi, backend, peak, cases, o);
  EXPECT_EQ(bad.results[0].status, reports::Status::failed);
  EXPECT_NE(bad.results[0].error.value_or("").find("output of token 0"), std::string::npos)
      << bad.results[0].error.value_or("");
}
