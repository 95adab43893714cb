#include "core/numeric_formats.hpp"

#include <bit>
#include <cmath>
#include <limits>

namespace fb {
namespace {

// Generic float -> small float with `exp_bits` exponent and `man_bits` mantissa bits, IEEE-like bias,
// round to nearest even, subnormals kept. `max_finite` saturates (fp8) instead of overflowing to inf.
std::uint32_t encode_small(float value, int exp_bits, int man_bits, bool saturate, float max_finite,
                           bool has_inf) {
  const std::uint32_t sign = std::signbit(value) ? 1u : 0u;
  const std::uint32_t sign_shift = static_cast<std::uint32_t>(exp_bits + man_bits);
  const int bias = (1 << (exp_bits - 1)) - 1;
  if (std::isnan(value)) {
    // e4m3 (no inf) encodes NaN as all ones; others as exponent all ones with a mantissa bit.
    const std::uint32_t nan = has_inf ? ((((1u << exp_bits) - 1) << man_bits) | (1u << (man_bits - 1)))
                                      : ((1u << (exp_bits + man_bits)) - 1);
    return (sign << sign_shift) | nan;
  }
  float mag = std::fabs(value);
  if (mag > max_finite || std::isinf(mag)) {
    // Without saturation, round to nearest even overflows only from max_finite + half its ulp (fp16:
    // 65520) up; below that it rounds to max_finite, as the hardware conversions (__float2half_rn) do.
    const float overflow = max_finite + std::ldexp(1.0f, std::ilogb(max_finite) - man_bits - 1);
    if (saturate || !has_inf || mag < overflow)
      mag = max_finite;
    else
      return (sign << sign_shift) | (((1u << exp_bits) - 1) << man_bits);
  }
  if (mag == 0.0f) return sign << sign_shift;
  int exponent = 0;
  const float fraction = std::frexp(mag, &exponent);  // mag = fraction * 2^exponent, fraction in [0.5, 1)
  int e = exponent - 1;                               // mag = 1.m * 2^e
  const int min_normal = 1 - bias;
  double scaled;
  std::uint32_t biased;
  if (e < min_normal) {  // subnormal: value = m * 2^(min_normal - man_bits)
    scaled = std::ldexp(static_cast<double>(mag), man_bits - min_normal);
    biased = 0;
  } else {
    scaled = std::ldexp(static_cast<double>(fraction) * 2.0 - 1.0, man_bits);
    biased = static_cast<std::uint32_t>(e + bias);
  }
  double rounded = std::nearbyint(scaled);  // default rounding mode: nearest even
  std::uint32_t mantissa = static_cast<std::uint32_t>(rounded);
  if (biased == 0 && mantissa == (1u << man_bits)) {  // subnormal rounded up to the smallest normal
    biased = 1;
    mantissa = 0;
  } else if (biased > 0 && mantissa == (1u << man_bits)) {
    mantissa = 0;
    ++biased;
  }
  std::uint32_t bits = (biased << man_bits) | mantissa;
  // Clamp anything that rounded past the largest finite encoding.
  const std::uint32_t max_bits = has_inf ? ((((1u << exp_bits) - 2) << man_bits) | ((1u << man_bits) - 1))
                                         : ((((1u << exp_bits) - 1) << man_bits) | ((1u << man_bits) - 2));
  if (bits > max_bits) bits = max_bits;
  return (sign << sign_shift) | bits;
}

float decode_small(std::uint32_t bits, int exp_bits, int man_bits, bool has_inf) {
  const std::uint32_t sign = (bits >> (exp_bits + man_bits)) & 1u;
  const std::uint32_t exp = (bits >> man_bits) & ((1u << exp_bits) - 1);
  const std::uint32_t man = bits & ((1u << man_bits) - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  float value;
  const bool all_ones_exp = exp == (1u << exp_bits) - 1;
  if (has_inf && all_ones_exp) {
    value = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  } else if (!has_inf && all_ones_exp && man == (1u << man_bits) - 1) {
    value = std::numeric_limits<float>::quiet_NaN();
  } else if (exp == 0) {
    value = std::ldexp(static_cast<float>(man), 1 - bias - man_bits);
  } else {
    value = std::ldexp(1.0f + std::ldexp(static_cast<float>(man), -man_bits), static_cast<int>(exp) - bias);
  }
  return sign ? -value : value;
}

}  // namespace

std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if (std::isnan(value)) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_fp16(float value) {
  return static_cast<std::uint16_t>(encode_small(value, 5, 10, false, 65504.0f, true));
}
float fp16_to_float(std::uint16_t bits) {
  return decode_small(bits, 5, 10, true);
}

std::uint8_t float_to_fp8_e4m3(float value) {
  return static_cast<std::uint8_t>(encode_small(value, 4, 3, true, 448.0f, false));
}
float fp8_e4m3_to_float(std::uint8_t bits) {
  return decode_small(bits, 4, 3, false);
}

std::uint8_t float_to_fp8_e5m2(float value) {
  return static_cast<std::uint8_t>(encode_small(value, 5, 2, true, 57344.0f, true));
}
float fp8_e5m2_to_float(std::uint8_t bits) {
  return decode_small(bits, 5, 2, true);
}

}  // namespace fb
