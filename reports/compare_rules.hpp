#pragma once
// Rules for `factorybench compare`: how much change counts as a change, per result and metric, and absolute
// floors and ceilings a candidate must meet whatever the baseline says. A rules file is JSON:
//
//   { "tolerance": "5%",            default relative tolerance (a fraction 0.05 or a string "5%")
//     "noise_sigmas": 2,            width of the noise band, in standard deviations (both sides' spread)
//     "max_noise": "10%",           a change within a noise band wider than this is AMBIGUOUS, not SAME
//     "fail_on_missing": false,     a result or metric missing from the candidate fails the gate
//     "rules": [
//       {"benchmark": "collective", "result": "allreduce/*", "metric": "busbw_gbps", "tolerance": "3%"},
//       {"benchmark": "train", "metric": "mfu", "min": 0.45},
//       {"benchmark": "resilience", "metric": "ckpt_restore_s", "abs_tolerance": 0.05},   in the metric's
//       unit
//       {"metric": "time_us", "ignore": true},
//       "goodput_pct >= 90",                 shorthand: [BENCHMARK/RESULT-GLOB] METRIC-GLOB (>=|<=) NUMBER
//       "train/llama3-* mfu >= 0.45" ] }
//
// Globs take `*` (any run of characters, '/' included) and `?` (one character). Rules apply in file order;
// a later matching rule overrides the fields it sets (tolerance, abs_tolerance, min, max, ignore), like CSS.
// abs_tolerance: a change no larger than this, in the metric's own unit, is SAME whatever its relative size
// (a 10 ms checkpoint restore that takes 12 ms; goodput within 1 percentage point).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::reports {

// Shell-style match of the whole text: `*` any run (possibly empty), `?` exactly one character.
bool glob_match(std::string_view pattern, std::string_view text);

// "5%" → 0.05, "0.05" → 0.05, "5 %" → 0.05. Must be finite and in [0, 10] (1000%). `what` names the
// option or JSON path in the usage Error.
double parse_tolerance(std::string_view text, std::string_view what);

struct MetricRule {
  std::string benchmark = "*";
  std::string result = "*";  // glob over the result name ("allreduce/bf16/*")
  std::string metric = "*";
  std::optional<double> tolerance;      // relative, a fraction
  std::optional<double> abs_tolerance;  // absolute, in the metric's unit
  std::optional<double> min;            // floor on the candidate's value (inclusive)
  std::optional<double> max;            // ceiling on the candidate's value (inclusive)
  std::optional<bool> ignore;           // leave the metric out of the comparison
  std::string where;                    // "rules.json: $.rules[2]", for messages

  bool matches(std::string_view bench, std::string_view result_name, std::string_view metric_name) const;
};

// What applies to one metric once every matching rule has been applied.
struct EffectiveRule {
  double tolerance = 0.05;
  std::optional<double> abs_tolerance;
  std::optional<double> min;
  std::optional<double> max;
  bool ignore = false;
};

struct CompareRules {
  double tolerance = 0.05;
  double noise_sigmas = 2.0;
  double max_noise = 0.10;
  bool fail_on_missing = false;
  std::vector<MetricRule> rules;

  // `other_name`: a result compared under two names (a published reference's and the run's it matched by
  // `params.match`): a rule written against either applies.
  EffectiveRule resolve(std::string_view bench, std::string_view result_name, std::string_view metric_name,
                        std::string_view other_name = {}) const;
};

// Parses "[BENCHMARK/RESULT-GLOB] METRIC-GLOB (>=|<=) NUMBER"; throws an input Error naming `where`.
MetricRule parse_bound_rule(std::string_view text, const std::string& where);

// Throws an input Error "SOURCE: $.rules[1].min: expected a number" on bad content.
CompareRules compare_rules_from_json(const nlohmann::json& j, const std::string& source);
CompareRules read_compare_rules(const std::filesystem::path& path);

}  // namespace fb::reports
