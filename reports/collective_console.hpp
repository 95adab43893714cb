#pragma once
// The collective benchmark's console table, in nccl-tests' columns: size, count, type, redop, root, then
// time, algbw, busbw and #wrong for out-of-place and in-place, and the "# Avg bus bandwidth" line.
// A view of the Results (reads params and metrics only); measuring never formats.
#include <ostream>
#include <span>

#include "reports/report.hpp"

namespace fb::reports {

void print_collective_table(std::ostream& out, std::span<const Result> results);

}  // namespace fb::reports
