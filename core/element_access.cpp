#include "core/element_access.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/numeric_formats.hpp"

namespace fb {
namespace {

template <typename T>
T read(const void* data, std::size_t index) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + index * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void write(void* data, std::size_t index, T v) {
  std::memcpy(static_cast<char*>(data) + index * sizeof(T), &v, sizeof(T));
}

template <typename T>
T to_int(double value) {
  // Truncation toward zero, then wrap modulo 2^bits (well defined through the unsigned type).
  const auto wide = static_cast<long long>(std::trunc(value));
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<unsigned long long>(wide)));
}

}  // namespace

double load_element(const void* data, DType type, std::size_t index) {
  switch (type) {
    case DType::fp64:
      return read<double>(data, index);
    case DType::fp32:
    case DType::tf32:
      return read<float>(data, index);
    case DType::fp16:
      return fp16_to_float(read<std::uint16_t>(data, index));
    case DType::bf16:
      return bf16_to_float(read<std::uint16_t>(data, index));
    case DType::fp8_e4m3:
      return fp8_e4m3_to_float(read<std::uint8_t>(data, index));
    case DType::fp8_e5m2:
      return fp8_e5m2_to_float(read<std::uint8_t>(data, index));
    case DType::int32:
      return read<std::int32_t>(data, index);
    case DType::int8:
      return read<std::int8_t>(data, index);
  }
  return 0.0;
}

void store_element(void* data, DType type, std::size_t index, double value) {
  const auto f = static_cast<float>(value);
  switch (type) {
    case DType::fp64:
      write<double>(data, index, value);
      break;
    case DType::fp32:
    case DType::tf32:
      write<float>(data, index, f);
      break;
    case DType::fp16:
      write<std::uint16_t>(data, index, float_to_fp16(f));
      break;
    case DType::bf16:
      write<std::uint16_t>(data, index, float_to_bf16(f));
      break;
    case DType::fp8_e4m3:
      write<std::uint8_t>(data, index, float_to_fp8_e4m3(f));
      break;
    case DType::fp8_e5m2:
      write<std::uint8_t>(data, index, float_to_fp8_e5m2(f));
      break;
    case DType::int32:
      write<std::int32_t>(data, index, to_int<std::int32_t>(value));
      break;
    case DType::int8:
      write<std::int8_t>(data, index, to_int<std::int8_t>(value));
      break;
  }
}

double exact_integer_limit(DType type) {
  // 2^(mantissa bits + 1) for floats: the first integer above it that is odd is not representable.
  switch (type) {
    case DType::fp64:
      return 9007199254740992.0;  // 2^53
    case DType::fp32:
    case DType::tf32:
      return 16777216.0;  // 2^24 (tf32 is stored and communicated as fp32)
    case DType::fp16:
      return 2048.0;  // 2^11
    case DType::bf16:
      return 256.0;  // 2^8
    case DType::fp8_e4m3:
      return 16.0;  // 2^4
    case DType::fp8_e5m2:
      return 8.0;  // 2^3
    case DType::int32:
      return 2147483647.0;
    case DType::int8:
      return 127.0;
  }
  return 0.0;
}

}  // namespace fb
