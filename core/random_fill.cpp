#include "core/random_fill.hpp"

#include <cstring>

#include "core/numeric_formats.hpp"

namespace fb {

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  SplitMix64 mix(seed ^ (stream * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull));
  return mix.next();
}

double random_value_at(std::uint64_t seed, std::uint64_t index, double lo, double hi) {
  constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ull;  // SplitMix64's increment
  SplitMix64 rng(seed + 2 * index * kGamma);               // the state after 2·index draws
  const double mag = lo + (hi - lo) * rng.uniform();
  return (rng.next() & 1u) ? -mag : mag;
}

void fill_random_host(void* out, std::size_t count, DType type, std::uint64_t seed, double lo, double hi) {
  SplitMix64 rng(seed);
  auto value = [&] {
    const double mag = lo + (hi - lo) * rng.uniform();
    return (rng.next() & 1u) ? -mag : mag;
  };
  auto* bytes = static_cast<unsigned char*>(out);
  switch (type) {
    case DType::fp64:
      for (std::size_t i = 0; i < count; ++i) reinterpret_cast<double*>(out)[i] = value();
      break;
    case DType::fp32:
    case DType::tf32:
      for (std::size_t i = 0; i < count; ++i) reinterpret_cast<float*>(out)[i] = static_cast<float>(value());
      break;
    case DType::fp16:
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint16_t h = float_to_fp16(static_cast<float>(value()));
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      break;
    case DType::bf16:
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint16_t h = float_to_bf16(static_cast<float>(value()));
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      break;
    case DType::fp8_e4m3:
      for (std::size_t i = 0; i < count; ++i) bytes[i] = float_to_fp8_e4m3(static_cast<float>(value()));
      break;
    case DType::fp8_e5m2:
      for (std::size_t i = 0; i < count; ++i) bytes[i] = float_to_fp8_e5m2(static_cast<float>(value()));
      break;
    case DType::int32:
      for (std::size_t i = 0; i < count; ++i) {
        const auto v = static_cast<std::int32_t>(1 + rng.next() % 64);
        reinterpret_cast<std::int32_t*>(out)[i] = (rng.next() & 1u) ? -v : v;
      }
      break;
    case DType::int8:
      for (std::size_t i = 0; i < count; ++i) {
        const auto v = static_cast<std::int8_t>(1 + rng.next() % 64);
        reinterpret_cast<std::int8_t*>(out)[i] = static_cast<std::int8_t>((rng.next() & 1u) ? -v : v);
      }
      break;
  }
}

}  // namespace fb
