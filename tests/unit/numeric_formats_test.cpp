#include "core/numeric_formats.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "core/statistics.hpp"

namespace fb {
namespace {

TEST(NumericFormats, Bf16KnownEncodings) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
}

TEST(NumericFormats, Fp16KnownEncodings) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  // Round to nearest even past the largest finite value: below 65504 + half an ulp (16) to 65504, from
  // there (a tie, to the even neighbour 65536) to infinity.
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(-65519.0f), 0xFBFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_fp16(1e6f), 0x7C00);
  EXPECT_EQ(float_to_fp16(-0.5f), 0xB800);
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp16_to_float(0x0001), 0x1p-24f);
  EXPECT_TRUE(std::isinf(fp16_to_float(float_to_fp16(1e6f))));
}

TEST(NumericFormats, Fp8E4m3AndE5m2) {
  EXPECT_EQ(float_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_fp8_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_fp8_e4m3(1e6f), 0x7E);  // saturates
  EXPECT_EQ(fp8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(float_to_fp8_e5m2(1.0f), 0x3C);
  EXPECT_EQ(fp8_e5m2_to_float(0x7B), 57344.0f);
  // Every finite encoding round-trips.
  for (int b = 0; b < 256; ++b) {
    const float v = fp8_e4m3_to_float(static_cast<std::uint8_t>(b));
    if (std::isfinite(v) && v != 0.0f) {
      EXPECT_EQ(float_to_fp8_e4m3(v), b) << b;
    }
  }
}

TEST(Dtype, ParseAndTable) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp8"), DType::fp8_e4m3);
  EXPECT_EQ(dtype_bytes(DType::fp8_e5m2), 1u);
  EXPECT_EQ(dtype_bytes(DType::tf32), 4u);
  try {
    parse_dtype("fp12");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'fp12'"), std::string::npos);
  }
}

TEST(RandomFill, SeededNeverZeroAndRepresentable) {
  std::vector<std::uint16_t> a(4096), b(4096);
  fill_random_host(a.data(), a.size(), DType::bf16, 7);
  fill_random_host(b.data(), b.size(), DType::bf16, 7);
  EXPECT_EQ(a, b);
  for (auto v : a) {
    const float f = bf16_to_float(v);
    EXPECT_NE(f, 0.0f);
    EXPECT_LE(std::fabs(f), 1.0f);
  }
  fill_random_host(b.data(), b.size(), DType::bf16, 8);
  EXPECT_NE(a, b);
  std::vector<std::int32_t> ints(1000);
  fill_random_host(ints.data(), ints.size(), DType::int32, 1);
  for (auto v : ints) EXPECT_TRUE(v != 0 && v >= -64 && v <= 64);
}

// Any element of a stream, computed alone, is the element the stream writes: a TP rank's slice of a tensor
// holds the whole tensor's values (workloads/train/model_weights.cpp).
TEST(RandomFill, ValueAtIndexIsTheStreamsElement) {
  std::vector<double> d(3000);
  std::vector<float> f(3000);
  fill_random_host(d.data(), d.size(), DType::fp64, 42, 0.01, 0.5);
  fill_random_host(f.data(), f.size(), DType::fp32, 42, 0.01, 0.5);
  for (std::size_t i : {0ul, 1ul, 2ul, 17ul, 1024ul, 2999ul}) {
    EXPECT_EQ(random_value_at(42, i, 0.01, 0.5), d[i]) << i;
    EXPECT_EQ(static_cast<float>(random_value_at(42, i, 0.01, 0.5)), f[i]) << i;
  }
  EXPECT_NE(random_value_at(43, 5, 0.01, 0.5), d[5]);
}

TEST(Statistics, KnownAnswers) {
  const std::vector<double> v{5, 1, 4, 2, 3};
  const auto s = summarize(v);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.p99, 5);
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), 1e-12);
  std::vector<double> hundred;
  for (int i = 1; i <= 200; ++i) hundred.push_back(i);
  EXPECT_DOUBLE_EQ(summarize(hundred).p99, 198);  // nearest rank: ceil(0.99 * 200) = 198
}

}  // namespace
}  // namespace fb
