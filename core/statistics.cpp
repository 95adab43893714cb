#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace fb {

SampleStats summarize(std::span<const double> samples) {
  SampleStats s;
  s.n = samples.size();
  if (s.n == 0) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  const std::size_t mid = s.n / 2;
  s.median = s.n % 2 ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(s.n)));
  s.p99 = sorted[std::max<std::size_t>(rank, 1) - 1];
  double var = 0;
  for (double v : sorted) var += (v - s.mean) * (v - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(var / static_cast<double>(s.n - 1)) : 0.0;
  return s;
}

}  // namespace fb
