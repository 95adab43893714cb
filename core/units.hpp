#pragma once
// Sizes and durations as users type them: "64K", "1M", "8G", "1Gi"; "500ms", "90s", "15m", "2h".
#include <cstdint>
#include <string>
#include <string_view>

namespace fb {

// Binary multiples as nccl-tests reads them: K = 1024, M = 1024², G = 1024³, T = 1024⁴ (Ki/Mi/Gi/Ti and a
// trailing B are accepted too). `what` names the option in the error message.
std::uint64_t parse_size(std::string_view text, std::string_view what = "size");

// Seconds. Suffixes ns, us, ms, s, m, h, d; a bare number is seconds. Negative values are rejected.
inline constexpr double kMaxDurationSeconds = 100 * 365.25 * 86400;  // parse_duration's ceiling: 100 years
double parse_duration(std::string_view text, std::string_view what = "duration");
// A duration that must name its unit, where a bare number would be read in another unit than meant: e.g.
// "give a unit (e.g. 6h or 6m)" for units "h", "m".
double parse_duration_with_unit(std::string_view text, std::string_view what, std::string_view unit,
                                std::string_view other_unit);
// A mean time between failures: a bare "6" (meant as hours, as MTBFs are quoted) would be six seconds and
// every run a failure.
double parse_mtbf_duration(std::string_view text, std::string_view what);

// "8 B", "64 KiB", "1.5 GiB".
std::string format_bytes(std::uint64_t bytes);
// "750 us", "1.25 s", "2h 05m".
std::string format_duration(double seconds);
// Decimal SI prefixes, four significant digits: format_si(1.5e12, "FLOP") = "1.5 TFLOP".
std::string format_si(double value, std::string_view unit);

}  // namespace fb
