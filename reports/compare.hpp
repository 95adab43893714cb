#pragma once
// Comparing two reports: the CI gate. Pure: reports and rules in, verdicts out; printers render them
// (compare_table.cpp, compare_markdown.cpp, compare_junit.cpp, compare_json.cpp).
//
// Results match by benchmark + name, metrics by name; the direction comes from the metric's `better`.
// For each metric present in both reports, with change = (candidate − baseline) / |baseline|:
//   SAME       |change| ≤ tolerance, |candidate − baseline| ≤ abs_tolerance (when a rule sets one), or
//              within the noise band when that band is no wider than max_noise
//   AMBIGUOUS  beyond the tolerance but within a noise band wider than max_noise: too noisy to tell
//   BETTER     beyond tolerance and noise, in the metric's better direction
//   WORSE      beyond tolerance and noise, the other way; or the candidate breaks a floor/ceiling rule,
//              or the candidate result failed
//   INFO       the metric has no direction (better = none): shown, never gated
//   MISSING    in the baseline only (fails the gate with fail_on_missing)
//   NEW        in the candidate only
// The noise band, when both sides carry stats of at least two samples, is
//   noise = noise_sigmas · sqrt(σ_b² + σ_c²) / |baseline|,
// σ being each side's sample standard deviation (a conservative stand-in for run-to-run spread; a quarter
// of max − min when the stddev is absent).
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/compare_rules.hpp"
#include "reports/report.hpp"

namespace fb::reports {

enum class Verdict { same, better, worse, ambiguous, info, missing, added };
inline constexpr std::size_t kVerdictCount = 7;

// "SAME", "BETTER", "WORSE", "AMBIGUOUS", "INFO", "MISSING", "NEW".
std::string_view to_string(Verdict v);

struct MetricComparison {
  std::string benchmark;
  std::string result;
  std::string metric;  // "status" for the row of a failed candidate result
  std::string unit;
  Better better = Better::none;
  std::optional<double> baseline;
  std::optional<double> candidate;
  std::optional<double> change;  // relative, (candidate − baseline) / |baseline|
  std::optional<double> ratio;   // candidate / baseline (a run as a fraction of a published figure)
  std::optional<double> noise;   // relative noise band, when both sides carried spread
  double tolerance = 0;
  std::optional<double> abs_tolerance;  // absolute, in `unit`, when a rule set one
  std::optional<double> min;            // floor that applied
  std::optional<double> max;            // ceiling that applied
  Verdict verdict = Verdict::same;
  std::string reason;  // "within ±5% tolerance", "-12.3% beyond ±5% tolerance", "0.41 below floor 0.45"
  bool fails = false;  // counts against the gate (WORSE, or MISSING with fail_on_missing)
};

// A side of the comparison, as printers name it.
struct CompareSide {
  std::string source;  // file path
  std::string label;   // "run 2026-…, host backend, 4 ranks" or "published reference: …"
  bool reference = false;
};

struct Comparison {
  CompareSide baseline;
  CompareSide candidate;
  double tolerance = 0.05;
  bool fail_on_missing = false;
  std::vector<std::string> warnings;
  std::vector<MetricComparison> rows;

  std::array<std::size_t, kVerdictCount> counts() const;
  std::size_t count(Verdict v) const { return counts()[static_cast<std::size_t>(v)]; }
  std::size_t failures() const;
  // 0 no regression, 1 at least one WORSE (or MISSING with fail_on_missing).
  int exit_status() const { return failures() ? 1 : 0; }
  // "12 metrics: 9 SAME, 1 BETTER, 1 WORSE, 1 MISSING"
  std::string summary_line() const;
};

// Throws an input Error (exit 2) for reports that cannot be compared: nothing in common, or one metric in
// different units or opposite directions (one side's `none` makes the row INFO, with a warning). Other
// differences (schema version, backend, world size, devices) become warnings in the result.
Comparison compare_reports(const Report& baseline, const Report& candidate, const CompareRules& rules,
                           const std::string& baseline_source = "baseline",
                           const std::string& candidate_source = "candidate");

// The verdict of one metric present on both sides (exposed for tests).
struct MetricVerdict {
  Verdict verdict = Verdict::same;
  std::optional<double> change;
  std::optional<double> noise;
  std::string reason;
};
MetricVerdict judge_metric(const Metric& baseline, const Metric& candidate, const EffectiveRule& rule,
                           double noise_sigmas, double max_noise);

// How a report introduces itself in a comparison header.
CompareSide describe_side(const Report& report, const std::string& source);

// Number formatting shared by the printers: integers as integers, else 4 significant digits (no exponent
// below 1e15): 482.3, 0.4523, 17179869184, 1234.6.
std::string format_value(double v);
// "+2.5%", "-12.3%", "+0.0%".
std::string format_change(double change);
// "0.975".
std::string format_ratio(double ratio);

}  // namespace fb::reports
