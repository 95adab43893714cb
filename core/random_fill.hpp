#pragma once
// Seeded random data, generated on the host so that both backends measure identical inputs.
// Values are never zero: zeros flatter tensor cores and hide unwritten outputs.
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

namespace fb {

// splitmix64: a tiny, well-mixed generator; the same seed gives the same stream on every machine.
struct SplitMix64 {
  std::uint64_t state;
  explicit SplitMix64(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// Mixes a base seed with a stream id (rank, buffer index) into an independent seed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

// Fills `count` elements of `type` at `out` with values uniform in ±[lo, hi] (random sign, magnitude in
// [lo, hi], lo > 0). Integers get values in ±[1, 64]. The result is exactly representable in `type`.
void fill_random_host(void* out, std::size_t count, DType type, std::uint64_t seed, double lo = 0.0625,
                      double hi = 1.0);

// Element `index` of what fill_random_host(out, …, DType::fp64 or fp32, seed, lo, hi) writes, without the
// elements before it: splitmix64 is a counter (its k-th draw mixes seed + (k+1)·γ) and each element takes two
// draws, magnitude then sign. A rank fills its slice of a tensor that exists whole only in the model (tensor
// parallelism) with exactly the values the unsplit tensor holds there.
double random_value_at(std::uint64_t seed, std::uint64_t index, double lo = 0.0625, double hi = 1.0);

}  // namespace fb
