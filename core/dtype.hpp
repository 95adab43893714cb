#pragma once
// Element types, with one table for names, sizes and parsing (no switch in five places).
#include <cstddef>
#include <span>
#include <string_view>

namespace fb {

enum class DType { fp64, fp32, tf32, fp16, bf16, fp8_e4m3, fp8_e5m2, int32, int8 };

struct DTypeInfo {
  DType type;
  std::string_view name;  // canonical name used on the command line and in reports
  std::size_t bytes;      // storage size of one element (tf32 is stored as fp32)
  bool is_float;
};

const DTypeInfo& dtype_info(DType type);
std::span<const DTypeInfo> all_dtypes();
inline std::string_view to_string(DType type) {
  return dtype_info(type).name;
}
inline std::size_t dtype_bytes(DType type) {
  return dtype_info(type).bytes;
}

// Accepts the canonical names and common aliases (float32, bfloat16, fp8 = fp8_e4m3, e5m2, int = int32).
// Throws a usage Error listing the valid names.
DType parse_dtype(std::string_view text);

}  // namespace fb
