// The CUDA transformer-block kernels (kernels/cuda/{rmsnorm,rope,embedding,head_copy}_cuda.cu) against their
// host twins, in fp32 and bf16, at step-like sizes. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/numeric_formats.hpp"
#include "core/random_fill.hpp"
#include "kernels/host/train_kernels_host.hpp"
#include "kernels/train_kernels.hpp"
#include "tests/gpu/cuda_test_backend.hpp"

namespace fb {
namespace {

using gpu_test::cuda_backend;

// Values stored in `type` (fp32, or bf16 bits), as bytes.
std::vector<std::uint8_t> random_typed(std::size_t n, DType type, std::uint64_t seed, double lo = -2,
                                       double hi = 2) {
  SplitMix64 rng(seed);
  std::vector<std::uint8_t> out(n * dtype_bytes(type));
  for (std::size_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(lo + rng.uniform() * (hi - lo));
    if (type == DType::fp32) {
      reinterpret_cast<float*>(out.data())[i] = v;
    } else {
      reinterpret_cast<std::uint16_t*>(out.data())[i] = float_to_bf16(v);
    }
  }
  return out;
}
float value(const std::vector<std::uint8_t>& b, DType type, std::size_t i) {
  return type == DType::fp32 ? reinterpret_cast<const float*>(b.data())[i]
                             : bf16_to_float(reinterpret_cast<const std::uint16_t*>(b.data())[i]);
}
DeviceBuffer upload(Backend& be, const void* p, std::size_t bytes) {
  auto buf = be.allocate(bytes);
  be.copy_to_device(buf, p, bytes);
  return buf;
}
template <typename V>
DeviceBuffer upload(Backend& be, const V& v) {
  return upload(be, v.data(), v.size() * sizeof(v[0]));
}
std::vector<std::uint8_t> download(Backend& be, const DeviceBuffer& buf, std::size_t bytes) {
  std::vector<std::uint8_t> v(bytes);
  be.synchronize();
  be.copy_to_host(v.data(), buf, bytes);
  return v;
}
void expect_close(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, DType type,
                  double tol, const char* what) {
  const std::size_t n = want.size() / dtype_bytes(type);
  int bad = 0;
  for (std::size_t i = 0; i < n && bad < 5; ++i) {
    const double a = value(got, type, i), b = value(want, type, i);
    if (std::fabs(a - b) > tol * (1 + std::fabs(b))) {
      ADD_FAILURE() << what << " element " << i << ": cuda " << a << ", host " << b;
      ++bad;
    }
  }
}

class BlockKernelsCuda : public ::testing::TestWithParam<DType> {};

TEST_P(BlockKernelsCuda, RmsNormForwardAndBackwardMatchTheHost) {
  std::string reason;
  auto be = cuda_backend(reason);
  if (!be) GTEST_SKIP() << reason;
  const DType t = GetParam();
  const double tol = t == DType::fp32 ? 2e-5 : 1.6e-2;
  auto dev = kernels::make_train_kernels(*be);
  auto ref = kernels::make_host_train_kernels();
  const std::int64_t rows = 1000, width = 4096, e = static_cast<std::int64_t>(dtype_bytes(t));
  const std::size_t bytes = static_cast<std::size_t>(rows * width * e);
  auto x = random_typed(rows * width, t, 1), delta = random_typed(rows * width, t, 2);
  auto gamma = random_typed(width, t, 3, 0.5, 1.5), dy = random_typed(rows * width, t, 4);
  auto dres = random_typed(rows * width, t, 5), dgamma = random_typed(width, t, 6);
  std::vector<std::uint8_t> sum(bytes), y(bytes), dx(bytes), dg = dgamma;
  std::vector<float> rstd(rows);
  ref->rmsnorm_forward(x.data(), delta.data(), sum.data(), gamma.data(), y.data(), rstd.data(), t, rows,
                       width, width, 1e-5f);
  ref->rmsnorm_backward(dy.data(), sum.data(), gamma.data(), rstd.data(), dres.data(), dx.data(), dg.data(),
                        t, rows, width, width);
  auto d_x = upload(*be, x), d_delta = upload(*be, delta), d_gamma = upload(*be, gamma),
       d_dy = upload(*be, dy);
  auto d_dres = upload(*be, dres), d_dg = upload(*be, dgamma);
  auto d_sum = be->allocate(bytes), d_y = be->allocate(bytes), d_dx = be->allocate(bytes);
  auto d_rstd = be->allocate(rows * 4);
  dev->rmsnorm_forward(d_x.data(), d_delta.data(), d_sum.data(), d_gamma.data(), d_y.data(),
                       d_rstd.as<float>(), t, rows, width, width, 1e-5f);
  // Backward from the host's stored sum and rstd, so each direction is compared on its own.
  auto d_sum_ref = upload(*be, sum), d_rstd_ref = upload(*be, rstd);
  dev->rmsnorm_backward(d_dy.data(), d_sum_ref.data(), d_gamma.data(), d_rstd_ref.as<float>(), d_dres.data(),
                        d_dx.data(), d_dg.data(), t, rows, width, width);
  expect_close(download(*be, d_sum, bytes), sum, t, 0, "sum");
  expect_close(download(*be, d_y, bytes), y, t, tol, "y");
  expect_close(download(*be, d_dx, bytes), dx, t, tol, "dx");
  expect_close(download(*be, d_dg, width * e), dg, t, t == DType::fp32 ? 1e-4 : 2e-2, "dgamma");
  const auto rs = download(*be, d_rstd, rows * 4);
  for (std::int64_t r = 0; r < rows; ++r)
    EXPECT_NEAR(reinterpret_cast<const float*>(rs.data())[r], rstd[r], 1e-5 * rstd[r]);
}

TEST_P(BlockKernelsCuda, RopeMatchesTheHost) {
  std::string reason;
  auto be = cuda_backend(reason);
  if (!be) GTEST_SKIP() << reason;
  const DType t = GetParam();
  auto dev = kernels::make_train_kernels(*be);
  auto ref = kernels::make_host_train_kernels();
  // llama3-8b's QKV rows at 8192 positions: 32 + 8 rotated heads of 128 within rows of 6144.
  const std::int64_t rows = 8192, ld = 6144, e = static_cast<std::int64_t>(dtype_bytes(t));
  auto x = random_typed(rows * ld, t, 7);
  auto d_x = upload(*be, x);
  ref->rope(x.data(), t, rows, ld, 0, 40, 128, 128, 8192, 500000.0f, false);
  dev->rope(d_x.data(), t, rows, ld, 0, 40, 128, 128, 8192, 500000.0f, false);
  // Angles up to 8191 rad: sinf/cosf and the host's libm agree to a few ulp of the angle.
  expect_close(download(*be, d_x, static_cast<std::size_t>(rows * ld * e)), x, t,
               t == DType::fp32 ? 1e-4 : 1.6e-2, "rope");
}

TEST_P(BlockKernelsCuda, EmbeddingLookupAndScatterAddMatchTheHost) {
  std::string reason;
  auto be = cuda_backend(reason);
  if (!be) GTEST_SKIP() << reason;
  const DType t = GetParam();
  auto dev = kernels::make_train_kernels(*be);
  auto ref = kernels::make_host_train_kernels();
  const std::int64_t vocab = 4000, width = 512, tokens = 8192, begin = 2000,
                     e = static_cast<std::int64_t>(dtype_bytes(t));
  SplitMix64 rng(8);
  std::vector<std::int32_t> ids(tokens);
  for (auto& id : ids) id = static_cast<std::int32_t>(rng.next() % 8000);  // half on this rank, many repeats
  auto table = random_typed(vocab * width, t, 9), d_out = random_typed(tokens * width, t, 10);
  auto grad = random_typed(vocab * width, t, 11);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(tokens * width * e)), g = grad;
  ref->embedding_forward(table.data(), t, begin, vocab, width, ids.data(), tokens, out.data());
  ref->embedding_backward(d_out.data(), t, begin, vocab, width, ids.data(), tokens, g.data());
  auto dt = upload(*be, table), dids = upload(*be, ids), ddo = upload(*be, d_out), dg = upload(*be, grad);
  auto dout = be->allocate(out.size());
  dev->embedding_forward(dt.data(), t, begin, vocab, width, dids.as<std::int32_t>(), tokens, dout.data());
  dev->embedding_backward(ddo.data(), t, begin, vocab, width, dids.as<std::int32_t>(), tokens, dg.data());
  expect_close(download(*be, dout, out.size()), out, t, 0, "lookup");
  // The same sums in the same order: equal up to fp32 contraction differences.
  expect_close(download(*be, dg, g.size()), g, t, t == DType::fp32 ? 1e-6 : 8e-3, "scatter-add");
}

TEST_P(BlockKernelsCuda, HeadCopiesMatchTheHost) {
  std::string reason;
  auto be = cuda_backend(reason);
  if (!be) GTEST_SKIP() << reason;
  const DType t = GetParam();
  auto dev = kernels::make_train_kernels(*be);
  auto ref = kernels::make_host_train_kernels();
  // deepseek-v3's MLA shapes: 128 heads, rope part 64 at column 128 of each 192-wide key head.
  const std::int64_t rows = 512, heads = 128, ld = heads * 192, e = static_cast<std::int64_t>(dtype_bytes(t));
  auto src = random_typed(rows * ld, t, 12), dst = random_typed(rows * 64, t, 13);
  auto d_src = upload(*be, src), d_dst = upload(*be, dst);
  ref->copy_heads(src.data(), ld, 128, 192, dst.data(), 64, 0, 0, t, rows, heads, 64,
                  true);  // sum over heads
  dev->copy_heads(d_src.data(), ld, 128, 192, d_dst.data(), 64, 0, 0, t, rows, heads, 64, true);
  expect_close(download(*be, d_dst, dst.size()), dst, t, t == DType::fp32 ? 1e-5 : 8e-3, "sum over heads");
  ref->copy_heads(dst.data(), 64, 0, 0, src.data(), ld, 128, 192, t, rows, heads, 64,
                  false);  // broadcast back
  dev->copy_heads(d_dst.data(), 64, 0, 0, d_src.data(), ld, 128, 192, t, rows, heads, 64, false);
  expect_close(download(*be, d_src, static_cast<std::size_t>(rows * ld * e)), src, t,
               t == DType::fp32 ? 1e-5 : 8e-3, "broadcast");
}

// Σ x² (the loss) is added in fp64 per block and then in block order (kernels/cuda/ordered_sum.cuh): it
// repeats bit for bit and agrees with the host's fp64 sum to rounding.
TEST_P(BlockKernelsCuda, SumOfSquaresRepeatsBitForBit) {
  std::string reason;
  auto be = cuda_backend(reason);
  if (!be) GTEST_SKIP() << reason;
  const DType t = GetParam();
  auto dev = kernels::make_train_kernels(*be);
  auto ref = kernels::make_host_train_kernels();
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{5'000'011}}) {
    const auto x = random_typed(static_cast<std::size_t>(n), t, 9);
    const auto d_x = upload(*be, x);
    const double want = ref->sum_squares(x.data(), t, n);
    const double first = dev->sum_squares(d_x.data(), t, n);
    EXPECT_NEAR(first, want, 1e-12 * want) << n;
    for (int again = 0; again < 10; ++again) EXPECT_EQ(dev->sum_squares(d_x.data(), t, n), first) << n;
  }
  EXPECT_EQ(dev->sum_squares(nullptr, t, 0), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Types, BlockKernelsCuda, ::testing::Values(DType::fp32, DType::bf16),
                         [](const auto& p) { return std::string(to_string(p.param)); });

}  // namespace
}  // namespace fb
