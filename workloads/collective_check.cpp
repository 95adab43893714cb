#include "workloads/collective_check.hpp"

#include <algorithm>
#include <cmath>

#include "core/element_access.hpp"

namespace fb::workloads {
namespace {

constexpr std::size_t kMaxModulus = 64;

// 2^-(mantissa bits): one unit in the last place relative to the value.
double relative_ulp(DType type) {
  switch (type) {
    case DType::fp64:
      return 0x1p-52;
    case DType::fp32:
    case DType::tf32:
      return 0x1p-23;
    case DType::fp16:
      return 0x1p-10;
    case DType::bf16:
      return 0x1p-7;
    case DType::fp8_e4m3:
      return 0x1p-3;
    case DType::fp8_e5m2:
      return 0x1p-2;
    default:
      return 0;
  }
}

}  // namespace

CheckPattern::CheckPattern(DType type, ReduceOp op, int ranks) : type_(type), op_(op), ranks_(ranks) {
  const double limit = exact_integer_limit(type);
  move_modulus_ = static_cast<std::size_t>(std::min<double>(limit, kMaxModulus));
  if (op == ReduceOp::max || op == ReduceOp::min) {
    modulus_ = move_modulus_;
    return;
  }
  // Every partial sum is at most ranks·scale·modulus ≤ limit, hence exact in any order.
  scale_ = op == ReduceOp::avg ? ranks : 1;
  const double m = std::floor(limit / (ranks * scale_));
  modulus_ = m >= 1 ? static_cast<std::size_t>(std::min<double>(m, kMaxModulus)) : 0;
  if (modulus_ == 0) scale_ = 1;  // too many ranks for the format: one contributor of 1 per element
}

double CheckPattern::reduce_input(int rank, std::size_t index) const {
  const auto r = static_cast<std::size_t>(rank);
  if (op_ == ReduceOp::max || op_ == ReduceOp::min)
    return static_cast<double>(1 + (r * 7 + index * 3) % modulus_);
  if (modulus_ == 0) return index % static_cast<std::size_t>(ranks_) == r ? 1.0 : 0.0;
  return scale_ * static_cast<double>(1 + (r * 7 + index) % modulus_);
}

double CheckPattern::reduce_expected(std::size_t index) const {
  double acc = reduce_input(0, index);
  for (int r = 1; r < ranks_; ++r) {
    const double v = reduce_input(r, index);
    if (op_ == ReduceOp::max)
      acc = std::max(acc, v);
    else if (op_ == ReduceOp::min)
      acc = std::min(acc, v);
    else
      acc += v;
  }
  if (op_ == ReduceOp::avg) acc /= ranks_;
  // As the dtype holds it (exact except avg with the one-contributor fallback).
  unsigned char bytes[8] = {};
  store_element(bytes, type_, 0, acc);
  return load_element(bytes, type_, 0);
}

double CheckPattern::move_value(int src, int dst, std::size_t index) const {
  const auto s = static_cast<std::size_t>(src), d = static_cast<std::size_t>(dst);
  return static_cast<double>(1 + (s * 131 + d * 31 + index) % move_modulus_);
}

bool CheckPattern::matches(double got, double expected) const {
  if (got == expected) return true;
  if (op_ != ReduceOp::avg) return false;
  const double ulp = relative_ulp(type_);
  return ulp > 0 && std::fabs(got - expected) <= std::fabs(expected) * ulp;
}

}  // namespace fb::workloads
