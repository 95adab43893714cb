#pragma once
// Bit-exact conversions between float and the 16- and 8-bit formats, done on the host so both backends
// see identical inputs. Round to nearest even; NaN stays NaN; fp8 saturates to its largest finite value
// (OCP FP8 spec: e4m3 max 448, e5m2 max 57344).
#include <cstdint>

namespace fb {

std::uint16_t float_to_bf16(float value);
float bf16_to_float(std::uint16_t bits);
std::uint16_t float_to_fp16(float value);
float fp16_to_float(std::uint16_t bits);
std::uint8_t float_to_fp8_e4m3(float value);
float fp8_e4m3_to_float(std::uint8_t bits);
std::uint8_t float_to_fp8_e5m2(float value);
float fp8_e5m2_to_float(std::uint8_t bits);

// Rounds to the nearest representable value of the format (still a float): what the tensor core sees.
inline float round_to_bf16(float value) {
  return bf16_to_float(float_to_bf16(value));
}

}  // namespace fb
