#pragma once
// --check inputs that every rank can predict exactly: small integers chosen so that every partial sum of
// any reduction order is exactly representable in the dtype (sum and avg), so the result is independent of
// the algorithm (ring, tree, NVLS) and a single wrong element is a real error. Pure functions.
#include <cstddef>

#include "core/communicator.hpp"
#include "core/dtype.hpp"

namespace fb::workloads {

class CheckPattern {
 public:
  CheckPattern(DType type, ReduceOp op, int ranks);

  // Input element `index` of rank `rank` for a reduction.
  double reduce_input(int rank, std::size_t index) const;
  // The reduction over all ranks of element `index` (avg divides by the rank count).
  double reduce_expected(std::size_t index) const;
  // Element `index` of the block that rank `src` sends to rank `dst` (data movement: gather, all-to-all,
  // broadcast, send/recv): distinct per source, destination and position.
  double move_value(int src, int dst, std::size_t index) const;
  // True when `got` is the expected value: exact, except avg on floats which may differ by one unit in the
  // last place of the dtype (NCCL's avg premultiplies by 1/n).
  bool matches(double got, double expected) const;
  // A value no correct result contains (written to outputs before the checked run).
  static constexpr double kSentinel = -1.0;

 private:
  DType type_;
  ReduceOp op_;
  int ranks_;
  double scale_ = 1;         // n for avg (so the average of integers is an integer), else 1
  std::size_t modulus_ = 1;  // values 1..modulus_ (0 = one non-zero contributor per element)
  std::size_t move_modulus_ = 1;
};

}  // namespace fb::workloads
