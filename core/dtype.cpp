#include "core/dtype.hpp"

#include <array>
#include <string>

#include "core/error.hpp"

namespace fb {
namespace {

constexpr std::array<DTypeInfo, 9> kTable{{
    {DType::fp64, "fp64", 8, true},
    {DType::fp32, "fp32", 4, true},
    {DType::tf32, "tf32", 4, true},
    {DType::fp16, "fp16", 2, true},
    {DType::bf16, "bf16", 2, true},
    {DType::fp8_e4m3, "fp8_e4m3", 1, true},
    {DType::fp8_e5m2, "fp8_e5m2", 1, true},
    {DType::int32, "int32", 4, false},
    {DType::int8, "int8", 1, false},
}};

struct Alias {
  std::string_view alias;
  DType type;
};
constexpr std::array<Alias, 12> kAliases{{
    {"double", DType::fp64},
    {"float64", DType::fp64},
    {"float", DType::fp32},
    {"float32", DType::fp32},
    {"half", DType::fp16},
    {"float16", DType::fp16},
    {"bfloat16", DType::bf16},
    {"fp8", DType::fp8_e4m3},
    {"e4m3", DType::fp8_e4m3},
    {"e5m2", DType::fp8_e5m2},
    {"int", DType::int32},
    {"int32_t", DType::int32},
}};

}  // namespace

const DTypeInfo& dtype_info(DType type) {
  for (const auto& info : kTable)
    if (info.type == type) return info;
  throw runtime_error("unknown dtype enumerator");
}

std::span<const DTypeInfo> all_dtypes() {
  return kTable;
}

DType parse_dtype(std::string_view text) {
  for (const auto& info : kTable)
    if (info.name == text) return info.type;
  for (const auto& alias : kAliases)
    if (alias.alias == text) return alias.type;
  std::string valid;
  for (const auto& info : kTable) {
    if (!valid.empty()) valid += ", ";
    valid += info.name;
  }
  throw usage_error("unknown dtype '" + std::string(text) + "' (expected one of " + valid + ")");
}

}  // namespace fb
