// The cuBLASLt engine for every cuda dtype against the fp64 reference (every element of C), batched and
// grouped GEMMs, autotuning, and the benchmark end to end. Skipped without a GPU (or without the cuda
// backend).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "core/mpi_context.hpp"
#include "kernels/gemm_engine.hpp"
#include "kernels/host/gemm_reference.hpp"
#include "tests/gpu/cuda_test_backend.hpp"
#include "workloads/gemm_benchmark.hpp"

using namespace fb;
using namespace fb::kernels;

namespace {

#define REQUIRE_GPU(backend)                       \
  std::string why_;                                \
  auto backend = fb::gpu_test::cuda_backend(why_); \
  if (!backend) GTEST_SKIP() << why_;

struct Operands {
  DeviceBuffer a, b, c;
};

// `spare` elements more than the problem reads, in each buffer (for operands that start inside them).
Operands make_operands(Backend& backend, const GemmProblem& p, std::uint64_t seed, std::int64_t spare = 0) {
  const auto t = gemm_types(p.dtype);
  Operands o{backend.allocate(static_cast<std::size_t>(p.elements_a() + spare) * dtype_bytes(t.a)),
             backend.allocate(static_cast<std::size_t>(p.elements_b() + spare) * dtype_bytes(t.b)),
             backend.allocate(static_cast<std::size_t>(p.elements_c() + spare) * dtype_bytes(t.c))};
  backend.fill_random(o.a, t.a, seed);
  backend.fill_random(o.b, t.b, seed + 1);
  backend.fill_random(o.c, t.c, seed + 2);
  return o;
}

// Byte offsets of the operands inside their buffers.
struct Offsets {
  std::size_t a = 0, b = 0, c = 0;
};

// Copies A, B and C to the host and checks every element of C.
GemmCheck check_all(Backend& backend, const GemmProblem& p, const Operands& o, Offsets at = {}) {
  backend.synchronize();
  std::vector<unsigned char> a(o.a.bytes()), b(o.b.bytes()), c(o.c.bytes());
  backend.copy_to_host(a.data(), o.a, a.size());
  backend.copy_to_host(b.data(), o.b, b.size());
  backend.copy_to_host(c.data(), o.c, c.size());
  const auto t = gemm_types(p.dtype);
  std::vector<GemmSample> samples;
  std::vector<double> values;
  for (std::int64_t bt = 0; bt < p.batch; ++bt)
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) {
        samples.push_back({i, j, bt});
        values.push_back(element_as_double(c.data() + at.c, t.c, gemm_c_index(p, samples.back())));
      }
  return check_gemm_samples(p, a.data() + at.a, b.data() + at.b, samples, values);
}

class CudaEngine : public ::testing::TestWithParam<DType> {};

}  // namespace

TEST_P(CudaEngine, MatchesFp64Reference) {
  REQUIRE_GPU(backend);
  GemmEngineOptions opt;
  opt.autotune = 4;
  auto engine = make_gemm_engine(*backend, GetParam(), opt);
  EXPECT_EQ(engine->name(), "cublaslt");
  EXPECT_FALSE(engine->emulated());
  const bool fp8 = GetParam() == DType::fp8_e4m3 || GetParam() == DType::fp8_e5m2;
  // fp8 runs only TN; the others in two layouts.
  std::vector<std::pair<bool, bool>> layouts = {{true, false}};
  if (!fp8) layouts.push_back({false, false});
  for (const auto& [ta, tb] : layouts) {
    GemmProblem p;
    p.m = 192;
    p.n = 160;
    p.k = 256;
    p.transa = ta;
    p.transb = tb;
    p.dtype = GetParam();
    auto o = make_operands(*backend, p, 21);
    const auto plan = engine->prepare(p, o.a.data(), o.b.data(), o.c.data());
    EXPECT_GE(plan.algo_id, 0);
    EXPECT_GE(plan.candidates, 1);
    engine->run(p, o.a.data(), o.b.data(), o.c.data());
    const auto check = check_all(*backend, p, o);
    EXPECT_TRUE(check.ok()) << to_string(GetParam()) << " ta=" << ta << ": " << check.detail << " ("
                            << plan.algo << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaEngine,
                         ::testing::Values(DType::bf16, DType::fp16, DType::tf32, DType::fp32,
                                           DType::fp8_e4m3, DType::fp8_e5m2),
                         [](const ::testing::TestParamInfo<DType>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST(CudaEngineShapes, StridedBatchedBf16) {
  REQUIRE_GPU(backend);
  auto engine = make_gemm_engine(*backend, DType::bf16);
  GemmProblem p;
  p.m = 128;
  p.n = 96;
  p.k = 64;
  p.batch = 3;
  p.transa = true;
  p.dtype = DType::bf16;
  auto o = make_operands(*backend, p, 5);
  engine->run(p, o.a.data(), o.b.data(), o.c.data());
  const auto check = check_all(*backend, p, o);
  EXPECT_TRUE(check.ok()) << check.detail;
}

// Experts with their own row counts in one grouped call; then with one expert's operands only 8 bytes
// aligned: cuBLAS's grouped 16-bit kernels would fault on them (a fault ends the CUDA context), so the engine
// runs that list one cuBLASLt matmul per group, told the alignment. Twelve calls in a row: more than the
// eight pinned buffers the grouped path stages its pointer tables in.
TEST(CudaEngineShapes, GroupedExpertsWithTheirOwnRows) {
  REQUIRE_GPU(backend);
  auto engine = make_gemm_engine(*backend, DType::bf16);
  const std::int64_t rows[3] = {64, 16, 48};
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{8}}) {
    std::vector<GemmProblem> groups(3);
    std::vector<Operands> ops;
    std::vector<Offsets> at(3);
    std::vector<const void*> a, b;
    std::vector<void*> c;
    for (int g = 0; g < 3; ++g) {
      groups[g].m = rows[g];
      groups[g].n = 32;
      groups[g].k = 64;
      groups[g].dtype = DType::bf16;
      ops.push_back(make_operands(*backend, groups[g], 80 + g, 8));
      if (g == 1) at[g] = {bytes, bytes, bytes};
      a.push_back(static_cast<char*>(ops[g].a.data()) + at[g].a);
      b.push_back(static_cast<char*>(ops[g].b.data()) + at[g].b);
      c.push_back(static_cast<char*>(ops[g].c.data()) + at[g].c);
    }
    for (int call = 0; call < 12; ++call) engine->run_grouped(groups, a, b, c);
    for (int g = 0; g < 3; ++g) {
      const auto check = check_all(*backend, groups[g], ops[g], at[g]);
      EXPECT_TRUE(check.ok()) << "expert " << g << ", expert 1 " << bytes << " bytes in: " << check.detail;
    }
  }
}

// Operands that start inside their buffers, 16 and 32 bytes past 256-byte boundaries, as the training step
// passes a head's columns of the QKV rows or a tensor inside a parameter region: the engine tells cuBLASLt
// their alignment (its heuristics assume 256 bytes), so the algorithm it picks reads them; the same shape
// at aligned addresses gets a plan of its own.
TEST(CudaEngineShapes, OperandsInsideBuffersAtSmallAlignments) {
  REQUIRE_GPU(backend);
  auto engine = make_gemm_engine(*backend, DType::bf16);
  GemmProblem p;
  p.m = 256;
  p.n = 128;
  p.k = 192;
  p.transa = true;
  p.dtype = DType::bf16;
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{16}, std::size_t{32}}) {
    auto o = make_operands(*backend, p, 70, 64);
    const Offsets at{bytes, 2 * bytes, bytes};  // B 32 and 64 bytes in
    engine->run(p, static_cast<char*>(o.a.data()) + at.a, static_cast<char*>(o.b.data()) + at.b,
                static_cast<char*>(o.c.data()) + at.c);
    const auto check = check_all(*backend, p, o, at);
    EXPECT_TRUE(check.ok()) << "operands " << bytes << " bytes in: " << check.detail;
  }
}

TEST(CudaEngineShapes, Fp8RejectsNonTnLayouts) {
  REQUIRE_GPU(backend);
  auto engine = make_gemm_engine(*backend, DType::fp8_e4m3);
  GemmProblem p;
  p.m = p.n = p.k = 64;
  p.dtype = DType::fp8_e4m3;  // NN
  auto o = make_operands(*backend, p, 1);
  try {
    engine->run(p, o.a.data(), o.b.data(), o.c.data());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("TN"), std::string::npos) << e.what();
  }
}

TEST(CudaBenchmark, Bf16RunReportsAlgoAndPasses) {
  REQUIRE_GPU(backend);
  MpiContext& mpi = fb::gpu_test::test_mpi();
  workloads::DevicePeak peak;
  peak.tflops["bf16"] = 989;
  peak.source = "test";
  const std::int64_t dims[] = {1024};
  const auto cases = workloads::gemm_cases_from_dims(DType::bf16, dims, dims, dims, 1, false, false);
  workloads::GemmRunOptions o;
  o.iters = 5;
  o.autotune = 4;
  auto run = workloads::run_gemm_benchmark(mpi, *backend, peak, DType::bf16, cases, o);
  ASSERT_EQ(run.results.size(), 1u);
  const auto& r = run.results[0];
  EXPECT_EQ(r.status, reports::Status::ok) << r.error.value_or("");
  ASSERT_NE(r.metric("algo"), nullptr);
  EXPECT_GE(r.metric("algo")->value, 0);
  EXPECT_GT(r.metric("tflops")->value, 0);
  EXPECT_GT(r.extra["autotune"]["timed"].get<int>(), 0);

  // A corrupted output on the device is caught.
  o.after_run_hook = [](Backend& b, DeviceBuffer& c, const GemmProblem&) {
    // bf16 1024.0: C(0,0) sums 1024 products of random sign and magnitude ≤ 1, so |C| is typically ~10.
    const std::uint16_t wrong = 0x4480;
    b.copy_to_device(c, &wrong, sizeof(wrong), 0);
  };
  auto bad = workloads::run_gemm_benchmark(mpi, *backend, peak, DType::bf16, cases, o);
  EXPECT_EQ(bad.results[0].status, reports::Status::failed);
}
