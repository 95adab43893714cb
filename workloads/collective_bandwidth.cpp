#include "workloads/collective_bandwidth.hpp"

#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb::workloads {

double bus_factor(CollectiveOp op, int ranks) {
  const auto& info = collective_info(op);
  const double n = ranks;
  return info.factor_num * (n - 1.0) / n + info.factor_constant;
}

std::size_t aligned_per_rank_count(std::uint64_t size_bytes, std::size_t elem_bytes, int ranks) {
  const std::uint64_t count = size_bytes / elem_bytes / static_cast<std::uint64_t>(ranks);
  // nccl-tests: (count/nranks) & -(16/eltSize); elements wider than 16 bytes need no alignment.
  const std::uint64_t align = elem_bytes < 16 ? 16 / elem_bytes : 1;
  return static_cast<std::size_t>(count / align * align);
}

CollectiveCounts collective_counts(CollectiveOp op, std::uint64_t size_bytes, DType type, int ranks) {
  const auto& info = collective_info(op);
  const std::size_t elem = dtype_bytes(type);
  const auto n = static_cast<std::size_t>(ranks);
  CollectiveCounts c;
  if (info.split == SizeSplit::whole) {
    c.count = c.send_count = c.recv_count = static_cast<std::size_t>(size_bytes / elem);
    c.bytes = c.count * elem;
    return c;
  }
  c.count = aligned_per_rank_count(size_bytes, elem, ranks);
  c.send_count = info.send_per_peer ? c.count * n : c.count;
  c.recv_count = info.recv_per_peer ? c.count * n : c.count;
  c.bytes = static_cast<std::uint64_t>(c.count) * n * elem;
  return c;
}

double algbw_gbps(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / 1e9 / seconds : 0.0;
}

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                       std::uint64_t step) {
  if (min_bytes == 0) throw usage_error("invalid -b/--minbytes 0: must be at least 1 byte");
  if (min_bytes > max_bytes)
    throw usage_error("invalid size range: -b/--minbytes " + std::to_string(min_bytes) +
                      " is larger than -e/--maxbytes " + std::to_string(max_bytes));
  // Above 1024 a factor is a typo or a negative number read unsigned (-2 is 2^64 - 2: one size only).
  if (step == 0 && (factor < 2 || factor > 1024))
    throw usage_error("invalid -f/--stepfactor " + std::to_string(factor) +
                      ": must be in [2, 1024] (or use -i STEP)");
  // nccl-tests sweeps tens of sizes; a million is a typo (-i 1 over 1 KiB..1 GiB was 1e9 sizes, never done).
  constexpr std::uint64_t kMaxSizes = 100000;
  if (step > 0 && (max_bytes - min_bytes) / step >= kMaxSizes)
    throw usage_error(fmt::format("invalid -i/--stepbytes {}: {} sizes from -b {} to -e {}; at most {}", step,
                                  (max_bytes - min_bytes) / step + 1, min_bytes, max_bytes, kMaxSizes));
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t s = min_bytes; s <= max_bytes;) {
    sizes.push_back(s);
    const std::uint64_t next = step > 0 ? s + step : s * factor;
    if (next <= s) break;  // overflow
    s = next;
  }
  return sizes;
}

}  // namespace fb::workloads
