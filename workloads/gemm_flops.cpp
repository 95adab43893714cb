#include "workloads/gemm_flops.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace fb::workloads {

double gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) *
         static_cast<double>(batch);
}

double tflops(double flops, double seconds) {
  if (!(seconds > 0)) throw runtime_error("tflops: elapsed time must be positive");
  return flops / seconds / 1e12;
}

double mfu(double achieved_tflops, double peak_tflops) {
  if (!(peak_tflops > 0)) throw runtime_error("mfu: peak must be positive");
  return achieved_tflops / peak_tflops;
}

double median_of(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

std::vector<int> slow_ranks(std::span<const double> per_rank_tflops, double threshold) {
  std::vector<int> slow;
  const double limit = median_of(per_rank_tflops) * (1.0 - threshold);
  for (std::size_t r = 0; r < per_rank_tflops.size(); ++r)
    if (per_rank_tflops[r] < limit) slow.push_back(static_cast<int>(r));
  return slow;
}

}  // namespace fb::workloads
