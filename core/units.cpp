#include "core/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace fb {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "12.5ms" (or "1e-3s", "1.5e3M") into the number and the unit; false when there is no leading
// number.
bool split_number(std::string_view text, double& number, std::string& suffix) {
  const auto digit = [&](std::size_t k) {
    return k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]));
  };
  std::size_t i = 0;
  while (i < text.size() && (digit(i) || text[i] == '.')) ++i;
  if (i == 0) return false;
  // An exponent only where digits follow it: "5e" is not one.
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    if (digit(j)) {
      while (digit(j)) ++j;
      i = j;
    }
  }
  const auto* begin = text.data();
  auto [end, ec] = std::from_chars(begin, begin + i, number);
  if (ec != std::errc() || end != begin + i) return false;
  suffix = lower(text.substr(i));
  return true;
}

}  // namespace

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format("invalid {} '{}': {}", what, text, why));
  };
  if (text.empty()) throw bad("expected a number such as 8, 64K, 1M or 8G");
  if (text.front() == '-') throw bad("must not be negative");
  double number = 0;
  std::string suffix;
  if (!split_number(text, number, suffix)) throw bad("expected a number such as 8, 64K, 1M or 8G");
  if (!suffix.empty() && suffix.back() == 'b') suffix.pop_back();
  if (!suffix.empty() && suffix.back() == 'i') suffix.pop_back();
  double scale = 1;
  if (suffix.empty())
    scale = 1;
  else if (suffix == "k")
    scale = 1024.0;
  else if (suffix == "m")
    scale = 1024.0 * 1024;
  else if (suffix == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    throw bad("unknown unit (use K, M, G or T)");
  const double bytes = number * scale;
  if (bytes != std::floor(bytes)) throw bad("not a whole number");  // also counts (--m, --sweep-gpus)
  if (bytes > 9.0e18) throw bad("too large");
  return static_cast<std::uint64_t>(bytes);
}

double parse_duration_with_unit(std::string_view text, std::string_view what, std::string_view unit,
                                std::string_view other_unit) {
  double number = 0;
  std::string suffix;
  if (split_number(text, number, suffix) && suffix.empty())
    throw usage_error(
        fmt::format("invalid {} '{}': give a unit (e.g. {}{} or {}{}): a bare number would be seconds", what,
                    text, text, unit, text, other_unit));
  return parse_duration(text, what);
}

double parse_mtbf_duration(std::string_view text, std::string_view what) {
  return parse_duration_with_unit(text, what, "h", "m");
}

double parse_duration(std::string_view text, std::string_view what) {
  const auto bad = [&](std::string_view why) {
    return usage_error(fmt::format("invalid {} '{}': {}", what, text, why));
  };
  if (text.empty()) throw bad("expected a duration such as 500ms, 90s, 15m or 2h");
  if (text.front() == '-') throw bad("must not be negative");
  double number = 0;
  std::string suffix;
  if (!split_number(text, number, suffix)) throw bad("expected a duration such as 500ms, 90s, 15m or 2h");
  double scale = 1;
  if (suffix.empty() || suffix == "s")
    scale = 1;
  else if (suffix == "ns")
    scale = 1e-9;
  else if (suffix == "us")
    scale = 1e-6;
  else if (suffix == "ms")
    scale = 1e-3;
  else if (suffix == "m" || suffix == "min")
    scale = 60;
  else if (suffix == "h")
    scale = 3600;
  else if (suffix == "d")
    scale = 86400;
  else
    throw bad("unknown unit (use ns, us, ms, s, m, h or d)");
  const double seconds = number * scale;
  if (!std::isfinite(seconds)) throw bad("not a finite duration");
  // Beyond a century a duration is a typo, and its nanoseconds no longer fit a 64-bit clock.
  if (seconds > kMaxDurationSeconds) throw bad("at most 100 years");
  return seconds;
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  // Three significant digits, but 1000-1023 of a unit as a whole number ({:.3g} wrote "1.02e+03 GiB").
  if (value == std::floor(value) || value >= 999.5) return fmt::format("{:.0f} {}", value, kUnits[unit]);
  return fmt::format("{:.3g} {}", value, kUnits[unit]);
}

std::string format_duration(double seconds) {
  if (seconds < 1e-3) return fmt::format("{:.3g} us", seconds * 1e6);
  if (seconds < 1.0) return fmt::format("{:.3g} ms", seconds * 1e3);
  if (seconds < 120.0) return fmt::format("{:.3g} s", seconds);
  if (seconds < 7200.0) return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.2f} h", seconds / 3600);
}

std::string format_si(double value, std::string_view unit) {
  constexpr const char* kPrefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int p = 0;
  while (std::abs(value) >= 1000 && p < 6) {
    value /= 1000;
    ++p;
  }
  return fmt::format("{:.4g} {}{}", value, kPrefixes[p], unit);
}

}  // namespace fb
