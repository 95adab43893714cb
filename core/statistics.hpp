#pragma once
// Summary statistics of timed samples. Pure; the report's "stats" object is built from this.
#include <cstddef>
#include <span>

namespace fb {

struct SampleStats {
  double min = 0, median = 0, max = 0, mean = 0, p99 = 0, stddev = 0;
  std::size_t n = 0;
};

// Median of an even count is the mean of the two middle values; p99 uses the nearest-rank definition
// (the ceil(0.99·n)-th smallest sample). Empty input gives n = 0 and zeros.
SampleStats summarize(std::span<const double> samples);

}  // namespace fb
