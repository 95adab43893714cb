#include "reports/nccl_tests_consistency.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fb::reports {
namespace {

// A factor of the table in the header: 1, (n−1)/n, 2(n−1)/n, or none (alltoallv's algbw, whose numerator
// is its largest peer's bytes, which the row does not print).
enum class Factor { one, ring, allreduce, none };

// How "size" relates to "count": size = count·elem, size = count·elem·n, or no rule (alltoallv).
enum class Shape { one, ranks, free };

struct Rule {
  const char* op;
  Shape shape;
  Factor algbw_per_size_over_time;
  Factor busbw_per_algbw;
};

constexpr Rule kRules[] = {
    {"allreduce", Shape::one, Factor::one, Factor::allreduce},
    {"broadcast", Shape::one, Factor::one, Factor::one},
    {"reduce", Shape::one, Factor::one, Factor::one},
    {"sendrecv", Shape::one, Factor::one, Factor::one},
    {"allgather", Shape::ranks, Factor::one, Factor::ring},
    {"reducescatter", Shape::ranks, Factor::one, Factor::ring},
    {"alltoall", Shape::ranks, Factor::one, Factor::ring},
    {"gather", Shape::ranks, Factor::one, Factor::ring},
    {"scatter", Shape::ranks, Factor::one, Factor::ring},
    {"hypercube", Shape::ranks, Factor::ring, Factor::one},
    {"alltoallv", Shape::free, Factor::none, Factor::ring},
};

// factorybench's alltoallv: size = count·elem (the busiest rank's), algbw = size / time.
constexpr Rule kFactorybenchAlltoallv{"alltoallv", Shape::one, Factor::one, Factor::ring};

// nccl-tests before 2.10 (commit ec1b5e2, June 2020): algbw = size·(n−1)/n / time and busbw = algbw.
constexpr Rule kLegacyRules[] = {
    {"allgather", Shape::ranks, Factor::ring, Factor::one},
    {"reducescatter", Shape::ranks, Factor::ring, Factor::one},
};

std::optional<double> factor_value(Factor f, std::optional<double> n) {
  switch (f) {
    case Factor::one:
      return 1.0;
    case Factor::ring:
      if (n) return (*n - 1) / *n;
      return std::nullopt;
    case Factor::allreduce:
      if (n) return 2 * (*n - 1) / *n;
      return std::nullopt;
    case Factor::none:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string factor_text(Factor f, double n) {
  if (f == Factor::ring) return fmt::format(" x ({0:g}-1)/{0:g}", n);
  if (f == Factor::allreduce) return fmt::format(" x 2({0:g}-1)/{0:g}", n);
  return "";
}

// Slack for the arithmetic itself (the printed digits are the real tolerance).
double slack(double v) {
  return 1e-12 + 1e-9 * std::abs(v);
}

// Whether bandwidth = bytes / time could have printed as `bw` for some time that prints as `time`.
bool follows_from_time(const PrintedFigure& bw, double bytes, const PrintedFigure& time) {
  const double lo = bytes / ((time.value + time.half_unit) * 1e3);
  const double hi = time.value > time.half_unit ? bytes / ((time.value - time.half_unit) * 1e3)
                                                : std::numeric_limits<double>::infinity();
  return bw.value + bw.half_unit + slack(bw.value) >= lo && bw.value - bw.half_unit - slack(bw.value) <= hi;
}

// Whether busbw = algbw · factor within the printed digits of both.
bool follows_from_algbw(const PrintedFigure& bus, const PrintedFigure& alg, double factor) {
  return std::abs(bus.value - alg.value * factor) <=
         bus.half_unit + alg.half_unit * factor + slack(bus.value);
}

// The rank count a rule reads the row with: the output's, else for a size of count·elem·n the n it shows.
std::optional<double> rank_count(const Rule& rule, const NcclTestsRow& row) {
  if (row.ranks) return *row.ranks;
  if (rule.shape != Shape::ranks || !row.count || *row.count == 0 || row.element_bytes == 0)
    return std::nullopt;
  const std::uint64_t per = *row.count * row.element_bytes;
  if (row.size == 0 || row.size % per != 0) return std::nullopt;
  return static_cast<double>(row.size / per);
}

// The figure a row should have shown, to the table's two decimals; one beyond any table's width (a time of
// 1e-300 us) in three significant digits rather than its 300 digits.
std::string expected_gbps(double gbps) {
  return std::abs(gbps) < 1e12 ? fmt::format("{:.2f}", gbps) : fmt::format("{:.3g}", gbps);
}

std::optional<std::string> check(const Rule& rule, const NcclTestsRow& row) {
  std::optional<double> n;
  if (row.ranks) n = *row.ranks;
  const std::uint64_t per = row.count ? *row.count * row.element_bytes : 0;  // ≤ 2^53 · 8: no overflow
  if (rule.shape == Shape::one && row.count && row.size != per)
    return fmt::format("size {} B is not count {} x {} B", row.size, *row.count, row.element_bytes);
  if (rule.shape == Shape::ranks && row.count && *row.count > 0) {
    if (row.size % per != 0 || row.size == 0)
      return fmt::format("size {} B is not a multiple of count {} x {} B", row.size, *row.count,
                         row.element_bytes);
    const double k = static_cast<double>(row.size / per);
    if (n && k != *n)
      return fmt::format("size {} B is count {} x {} B x {:g}, not x {:g} ranks", row.size, *row.count,
                         row.element_bytes, k, *n);
    n = k;  // an output without a device list still says how many ranks shared the buffer
  }
  if (row.time_us)
    if (const auto k = factor_value(rule.algbw_per_size_over_time, n)) {
      const double bytes = static_cast<double>(row.size) * *k;
      if (!follows_from_time(row.algbw, bytes, *row.time_us))
        return fmt::format("algbw {:g} GB/s does not follow from size {} B{} in {:g} us ({} GB/s)",
                           row.algbw.value, row.size,
                           factor_text(rule.algbw_per_size_over_time, n.value_or(0)), row.time_us->value,
                           expected_gbps(bytes / (row.time_us->value * 1e3)));
    }
  if (const auto f = factor_value(rule.busbw_per_algbw, n))
    if (!follows_from_algbw(row.busbw, row.algbw, *f))
      return fmt::format("busbw {:g} GB/s is not algbw {:g} GB/s{} ({} GB/s)", row.busbw.value,
                         row.algbw.value, factor_text(rule.busbw_per_algbw, n.value_or(0)),
                         expected_gbps(row.algbw.value * *f));
  return std::nullopt;
}

}  // namespace

std::string table_text(double value, int width) {
  char buf[64];
  for (const char* format : {"%*.2f", "%*.1f", "%*.0f"})
    if (std::snprintf(buf, sizeof buf, format, width, value) <= width) return std::string(buf);
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return std::string(buf);
}

double printed_half_unit(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const std::size_t e = text.find_first_of("eE");
  const std::string_view mantissa = text.substr(0, e);
  int exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view digits = text.substr(e + 1);
    if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
    std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
  }
  const std::size_t dot = mantissa.find('.');
  const int decimals = dot == std::string_view::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  // In double: "1e-2147483648" is a number strtod reads (as 0), and INT_MIN - decimals must not overflow.
  return 0.5 * std::pow(10.0, static_cast<double>(exponent) - decimals);
}

namespace {

// The current rule of the row's op (factorybench's own alltoallv for its console); nullptr for an op without
// one.
const Rule* current_rule(const NcclTestsRow& row) {
  if (row.factorybench && row.op == kFactorybenchAlltoallv.op) return &kFactorybenchAlltoallv;
  for (const auto& rule : kRules)
    if (row.op == rule.op) return &rule;
  return nullptr;
}

// nccl-tests' pre-2.10 rule of the row's op, where it had another (never for factorybench's console).
const Rule* legacy_rule(const NcclTestsRow& row) {
  if (row.factorybench) return nullptr;
  for (const auto& rule : kLegacyRules)
    if (row.op == rule.op) return &rule;
  return nullptr;
}

// The rule a row's figures are read by: the current one, or the pre-2.10 one where only that fits.
const Rule* rule_of(const NcclTestsRow& row) {
  const Rule* current = current_rule(row);
  if (!current || !check(*current, row)) return current;
  if (const Rule* old = legacy_rule(row); old && !check(*old, row)) return old;
  return current;
}

}  // namespace

std::optional<std::string> nccl_tests_row_mismatch(const NcclTestsRow& row) {
  const Rule* rule = rule_of(row);
  return rule ? check(*rule, row) : std::nullopt;
}

bool nccl_tests_row_before_2_10(const NcclTestsRow& row) {
  const Rule* rule = rule_of(row);
  return rule && rule == legacy_rule(row);
}

std::optional<double> nccl_tests_bus_factor(const NcclTestsRow& row, bool before_2_10) {
  const Rule* old = before_2_10 ? legacy_rule(row) : nullptr;
  const Rule* rule = old ? old : current_rule(row);
  return rule ? factor_value(rule->busbw_per_algbw, rank_count(*rule, row)) : std::nullopt;
}

std::optional<int> nccl_tests_ranks_by_size(const NcclTestsRow& row) {
  const Rule* rule = current_rule(row);
  if (!rule) return std::nullopt;
  NcclTestsRow by_size = row;
  by_size.ranks.reset();
  const auto n = rank_count(*rule, by_size);
  if (!n || *n > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(*n);
}

std::optional<std::string> nccl_tests_average_mismatch(const PrintedFigure& average,
                                                       const std::vector<PrintedFigure>& busbw) {
  if (busbw.empty()) return std::nullopt;
  double sum = 0, halves = 0;
  for (const auto& b : busbw) {
    sum += b.value;
    halves += b.half_unit;
  }
  const double n = static_cast<double>(busbw.size());
  const double mean = sum / n;
  if (std::abs(average.value - mean) <= average.half_unit + halves / n + slack(mean)) return std::nullopt;
  return fmt::format(
      "\"Avg bus bandwidth\" {:g} GB/s is not the mean busbw of the table's {} figures ({:.3f} GB/s)",
      average.value, busbw.size(), mean);
}

}  // namespace fb::reports
