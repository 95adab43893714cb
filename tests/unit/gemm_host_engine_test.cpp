// The OpenBLAS engine for every host dtype against the fp64 reference (every output element checked), the
// honest labelling of emulated bf16, clear errors for what the host cannot do, and a deliberately corrupted
// output caught both by the reference check and by the benchmark (which then fails the result).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/host_backend.hpp"
#include "core/mpi_context.hpp"
#include "core/random_fill.hpp"
#include "kernels/gemm_engine.hpp"
#include "kernels/host/gemm_openblas.hpp"
#include "kernels/host/gemm_reference.hpp"
#include "workloads/gemm_benchmark.hpp"

using namespace fb;
using namespace fb::kernels;

namespace {

struct Operands {
  DeviceBuffer a, b, c;
};

Operands make_operands(Backend& backend, const GemmProblem& p, std::uint64_t seed) {
  const auto t = gemm_types(p.dtype);
  Operands o{backend.allocate(static_cast<std::size_t>(p.elements_a()) * dtype_bytes(t.a)),
             backend.allocate(static_cast<std::size_t>(p.elements_b()) * dtype_bytes(t.b)),
             backend.allocate(static_cast<std::size_t>(p.elements_c()) * dtype_bytes(t.c))};
  backend.fill_random(o.a, t.a, seed);
  backend.fill_random(o.b, t.b, seed + 1);
  backend.fill_random(o.c, t.c, seed + 2);  // not zero: an unwritten output must fail the check
  return o;
}

// Every element of C against the fp64 reference.
GemmCheck check_all(const GemmProblem& p, const Operands& o) {
  std::vector<GemmSample> samples;
  std::vector<double> values;
  const auto t = gemm_types(p.dtype);
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) {
        samples.push_back({i, j, b});
        values.push_back(element_as_double(o.c.data(), t.c, gemm_c_index(p, samples.back())));
      }
  return check_gemm_samples(p, o.a.data(), o.b.data(), samples, values);
}

class HostEngine : public ::testing::TestWithParam<DType> {};

}  // namespace

TEST_P(HostEngine, MatchesFp64ReferenceInEveryLayout) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, GetParam());
  EXPECT_EQ(engine->dtype(), GetParam());
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      GemmProblem p;
      p.m = 67;  // odd sizes catch leading-dimension mistakes
      p.n = 45;
      p.k = 129;
      p.batch = 2;
      p.transa = ta;
      p.transb = tb;
      p.dtype = GetParam();
      auto o = make_operands(backend, p, 7);
      engine->prepare(p, o.a.data(), o.b.data(), o.c.data());
      engine->run(p, o.a.data(), o.b.data(), o.c.data());
      const auto check = check_all(p, o);
      EXPECT_TRUE(check.ok()) << "ta=" << ta << " tb=" << tb << ": " << check.detail;
      EXPECT_EQ(check.checked, static_cast<std::size_t>(p.m * p.n * p.batch));
      EXPECT_LE(check.worst, 1.0);
    }
}

TEST_P(HostEngine, PaddedLeadingDimensionsAndStrides) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, GetParam());
  GemmProblem p;
  p.m = 33;
  p.n = 17;
  p.k = 40;
  p.batch = 3;
  p.lda = 40;  // > m
  p.ldb = 48;  // > k
  p.ldc = 35;  // > m
  p.stride_c = 35 * 17 + 5;
  p.dtype = GetParam();
  auto o = make_operands(backend, p, 11);
  engine->run(p, o.a.data(), o.b.data(), o.c.data());
  const auto check = check_all(p, o);
  EXPECT_TRUE(check.ok()) << check.detail;
}

// Attention heads side by side in token rows (the train step's layout): every batch a column block of one
// buffer (stride = one head's columns, leading dimension = the row), the buffers exactly as long as the last
// block needs, so an engine that reads a whole leading dimension past the last block reads out of bounds
// (AddressSanitizer catches it in the sanitizer build). beta = 1 accumulates onto what C held.
TEST_P(HostEngine, HeadsSideBySideInOneBuffer) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, GetParam());
  GemmProblem p;
  p.m = 24, p.n = 16, p.k = 8, p.batch = 4;  // 4 heads: A and C rows hold 4·24, B rows 5·8
  p.lda = 4 * 24, p.stride_a = 24;
  p.ldb = 5 * 8, p.stride_b = 8;
  p.ldc = 4 * 24, p.stride_c = 24;
  p.dtype = GetParam();
  const auto t = gemm_types(p.dtype);
  const auto used = [](std::int64_t stride, std::int64_t batch, std::int64_t ld, std::int64_t rows,
                       std::int64_t cols) {
    return static_cast<std::size_t>(stride * (batch - 1) + ld * (cols - 1) + rows);
  };
  const std::size_t nc = used(p.stride_c, p.batch, p.ldc, p.m, p.n);
  Operands o{backend.allocate(used(p.stride_a, p.batch, p.lda, p.m, p.k) * dtype_bytes(t.a)),
             backend.allocate(used(p.stride_b, p.batch, p.ldb, p.k, p.n) * dtype_bytes(t.b)),
             backend.allocate(nc * dtype_bytes(t.c))};
  backend.fill_random(o.a, t.a, 21);
  backend.fill_random(o.b, t.b, 22);
  backend.fill_random(o.c, t.c, 23);
  engine->run(p, o.a.data(), o.b.data(), o.c.data());
  const auto check = check_all(p, o);
  EXPECT_TRUE(check.ok()) << check.detail;
  // Again with beta = 1: C = A·B + (A·B), every element twice the product (to the type's rounding).
  std::vector<double> once(nc);
  for (std::size_t i = 0; i < nc; ++i) once[i] = element_as_double(o.c.data(), t.c, i);
  p.beta = 1.0;
  engine->run(p, o.a.data(), o.b.data(), o.c.data());
  const double tol = p.dtype == DType::bf16 ? 1.0 / 128 : 1e-6;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t j = 0; j < p.n; ++j)
      for (std::int64_t i = 0; i < p.m; ++i) {
        const std::size_t at = static_cast<std::size_t>(b * p.stride_c + j * p.ldc + i);
        ASSERT_NEAR(element_as_double(o.c.data(), t.c, at), 2 * once[at], tol * (1 + 2 * std::fabs(once[at])))
            << "batch " << b << " (" << i << ", " << j << ")";
      }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HostEngine, ::testing::Values(DType::fp32, DType::fp64, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST(HostEngineLabels, Bf16IsLabelledEmulatedWithoutSbgemm) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, DType::bf16);
  EXPECT_EQ(engine->emulated(), !openblas_has_sbgemm());
  if (engine->emulated()) {
    EXPECT_NE(engine->name().find("emulated"), std::string::npos) << engine->name();
  } else {
    EXPECT_NE(engine->name().find("sbgemm"), std::string::npos) << engine->name();
  }
  EXPECT_FALSE(make_gemm_engine(backend, DType::fp32)->emulated());
  EXPECT_EQ(make_gemm_engine(backend, DType::fp64)->name(), "openblas cblas_dgemm");
}

TEST(HostEngineLabels, UnsupportedDtypesAreClearErrors) {
  HostBackend backend(1);
  for (const DType t : {DType::fp8_e4m3, DType::fp8_e5m2}) {
    try {
      make_gemm_engine(backend, t);
      FAIL() << "expected an error for " << to_string(t);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::unsupported);
      EXPECT_NE(std::string(e.what()).find("fp8 needs the cuda backend"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(make_gemm_engine(backend, DType::fp16), Error);
  EXPECT_THROW(make_gemm_engine(backend, DType::tf32), Error);
  EXPECT_THROW(make_gemm_engine(backend, DType::int8), Error);
  EXPECT_TRUE(gemm_unsupported_reason(BackendKind::cuda, DType::fp8_e4m3).empty());
  EXPECT_FALSE(gemm_unsupported_reason(BackendKind::cuda, DType::fp64).empty());
}

TEST(HostEngineLabels, InvalidProblemsAreRejected) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, DType::fp32);
  GemmProblem p;
  p.m = 0;
  p.n = 4;
  p.k = 4;
  float x[16] = {};
  EXPECT_THROW(engine->run(p, x, x, x), Error);
  p.m = 4;
  p.lda = 2;  // < m
  EXPECT_THROW(engine->run(p, x, x, x), Error);
  p.lda = 0;
  p.dtype = DType::fp64;  // engine is fp32
  EXPECT_THROW(engine->run(p, x, x, x), Error);
}

TEST(HostEngineGrouped, EachGroupHasItsOwnRowsAndEmptyGroupsAreSkipped) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, DType::fp32);
  std::vector<GemmProblem> groups(3);
  const std::int64_t rows[3] = {40, 0, 7};  // tokens routed to each expert
  std::vector<Operands> ops;
  for (int g = 0; g < 3; ++g) {
    groups[g].m =
        rows[g] ? rows[g] : 1;  // operands for the empty expert still need a valid shape to allocate
    groups[g].n = 24;
    groups[g].k = 32;
    ops.push_back(make_operands(backend, groups[g], 100 + g));
    groups[g].m = rows[g];
  }
  std::vector<float> untouched(static_cast<std::size_t>(24));
  std::memcpy(untouched.data(), ops[1].c.data(), untouched.size() * sizeof(float));
  std::vector<const void*> a, b;
  std::vector<void*> c;
  for (auto& o : ops) {
    a.push_back(o.a.data());
    b.push_back(o.b.data());
    c.push_back(o.c.data());
  }
  engine->run_grouped(groups, a, b, c);
  EXPECT_TRUE(check_all(groups[0], ops[0]).ok());
  EXPECT_TRUE(check_all(groups[2], ops[2]).ok());
  EXPECT_EQ(std::memcmp(untouched.data(), ops[1].c.data(), untouched.size() * sizeof(float)), 0);
}

TEST(HostEngineCheck, CorruptedOutputIsCaught) {
  HostBackend backend(1);
  auto engine = make_gemm_engine(backend, DType::fp32);
  GemmProblem p;
  p.m = p.n = p.k = 64;
  auto o = make_operands(backend, p, 3);
  engine->run(p, o.a.data(), o.b.data(), o.c.data());
  ASSERT_TRUE(check_all(p, o).ok());
  // One element off by 0.1% of its magnitude: far above fp32's tolerance.
  float* c = o.c.as<float>();
  c[5 + 9 * p.ld_c()] *= 1.001f;
  const auto check = check_all(p, o);
  EXPECT_FALSE(check.ok());
  EXPECT_EQ(check.mismatches, 1u);
  EXPECT_NE(check.detail.find("C(5,9)"), std::string::npos) << check.detail;
}

TEST(HostEngineCheck, BenchmarkFailsTheResultWhenTheHookCorruptsTheOutput) {
  static MpiContext mpi(nullptr, nullptr);  // a world of one process (MPI singleton)
  HostBackend backend(1);
  workloads::DevicePeak peak;
  peak.tflops["fp32"] = 1.0;
  peak.source = "test";
  GemmProblem p;
  p.m = p.n = p.k = 96;
  p.dtype = DType::fp32;
  const std::int64_t dims[] = {96};
  const auto cases = workloads::gemm_cases_from_dims(DType::fp32, dims, dims, dims, 1, false, false);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].name, "fp32/96x96x96");
  workloads::GemmRunOptions o;
  o.iters = 2;
  o.warmup = 1;

  auto clean = workloads::run_gemm_benchmark(mpi, backend, peak, DType::fp32, cases, o);
  ASSERT_EQ(clean.results.size(), 1u);
  EXPECT_EQ(clean.results[0].status, reports::Status::ok) << clean.results[0].error.value_or("");
  EXPECT_GT(clean.results[0].metric("tflops")->value, 0.0);
  EXPECT_EQ(clean.results[0].metric("time_us")->stats->n, 2u);

  // The hook doubles C(0,0) of the checked buffer set; the check samples always include it.
  o.after_run_hook = [](Backend&, DeviceBuffer& c, const GemmProblem&) {
    c.as<float>()[0] = 2 * c.as<float>()[0] + 1;
  };
  auto bad = workloads::run_gemm_benchmark(mpi, backend, peak, DType::fp32, cases, o);
  ASSERT_EQ(bad.results.size(), 1u);
  EXPECT_EQ(bad.results[0].status, reports::Status::failed);
  ASSERT_TRUE(bad.results[0].error.has_value());
  EXPECT_NE(bad.results[0].error->find("differ from the fp64 reference"), std::string::npos)
      << *bad.results[0].error;
  EXPECT_EQ(bad.summary["failed"], 1);

  // --no-check skips the reference: the same corruption goes unnoticed (and is labelled check=false).
  o.check = false;
  auto unchecked = workloads::run_gemm_benchmark(mpi, backend, peak, DType::fp32, cases, o);
  EXPECT_EQ(unchecked.results[0].status, reports::Status::ok);
  EXPECT_EQ(unchecked.results[0].params["check"], false);
}
