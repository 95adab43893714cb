#pragma once
// Reading and writing one element of any DType through a double, with the format's rounding (bf16, fp16,
// fp8 via numeric_formats; integers truncate and wrap like a C cast of the rounded value). Used where
// host code must interpret typed buffers: the MPI engine's reduction ops, result checks.
#include <cstddef>

#include "core/dtype.hpp"

namespace fb {

double load_element(const void* data, DType type, std::size_t index);
void store_element(void* data, DType type, std::size_t index, double value);

// Largest integer N such that every integer in [0, N] is exactly representable in `type` (fp32 2^24,
// bf16 256, fp16 2048, fp8_e4m3 16, fp8_e5m2 8, int32 2^31−1, int8 127).
double exact_integer_limit(DType type);

}  // namespace fb
