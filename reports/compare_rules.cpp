#include "reports/compare_rules.hpp"
#include "core/json_file.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "reports/json_cursor.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A JSON value with its path, so every error names where it happened.
struct Node : JsonCursor<Node> {
  double number() const {
    if (!j.is_number()) fail("expected a number");
    const double v = j.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number");
    return v;
  }
  double tolerance() const {
    if (j.is_string()) {
      try {
        return parse_tolerance(j.get<std::string>(), path);
      } catch (const Error& e) {
        throw input_error(source + ": " + e.what());
      }
    }
    const double v = number();
    // A plain number is a fraction: 5 would allow a 500% change, which is a typo for 5% far more often than
    // it is meant. Beyond 100% the percentage form says so.
    if (v < 0 || v > 1)
      fail("expected a fraction in [0, 1] (or a string like \"5%\", up to \"1000%\"), got " + j.dump());
    return v;
  }
  std::string glob() const {
    if (!j.is_string() || j.get<std::string>().empty()) fail("expected a non-empty glob pattern string");
    return j.get<std::string>();
  }
};

MetricRule rule_from_object(const Node& n) {
  static const char* const kKeys[] = {"benchmark",     "result", "metric", "tolerance",
                                      "abs_tolerance", "min",    "max",    "ignore"};
  MetricRule r;
  r.where = n.source + ": " + n.path;
  for (const auto& [key, value] : n.j.items()) {
    const Node field = n.child(value, n.path + "." + key);
    if (key == "benchmark") {
      r.benchmark = field.glob();
    } else if (key == "result") {
      r.result = field.glob();
    } else if (key == "metric") {
      r.metric = field.glob();
    } else if (key == "tolerance") {
      r.tolerance = field.tolerance();
    } else if (key == "abs_tolerance") {
      // In the metric's unit, so no percentage form: "5%" of what would be ambiguous.
      const double v = field.number();
      if (v < 0) field.fail("expected a non-negative number in the metric's unit, got " + value.dump());
      r.abs_tolerance = v;
    } else if (key == "min") {
      r.min = field.number();
    } else if (key == "max") {
      r.max = field.number();
    } else if (key == "ignore") {
      r.ignore = field.boolean();
    } else {
      std::string known;
      for (const char* k : kKeys) known += std::string(known.empty() ? "" : ", ") + k;
      field.fail("unknown rule field (known: " + known + ")");
    }
  }
  if (!r.tolerance && !r.abs_tolerance && !r.min && !r.max && !r.ignore)
    n.fail("a rule needs at least one of tolerance, abs_tolerance, min, max or ignore");
  if (r.min && r.max && *r.min > *r.max) n.fail("min is greater than max");
  // An ignored metric is left out of the gate: a bound or tolerance beside the ignore reads as a gate that is
  // not there (it would act only if a later rule said "ignore": false; such a rule can set it itself).
  if (r.ignore.value_or(false) && (r.min || r.max || r.tolerance || r.abs_tolerance))
    n.fail(std::string("a rule cannot both ignore a metric and set its ") +
           (r.min         ? "min"
            : r.max       ? "max"
            : r.tolerance ? "tolerance"
                          : "abs_tolerance") +
           " (ignore leaves it out of the gate)");
  return r;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  // Greedy match with backtracking to the last `*`: linear in practice, never exponential.
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

double parse_tolerance(std::string_view text, std::string_view what) {
  std::string_view s = trim(text);
  const bool percent = !s.empty() && s.back() == '%';
  if (percent) s.remove_suffix(1);
  const auto v = parse_double(s);
  const double value = v ? (percent ? *v / 100.0 : *v) : -1;
  if (!v || value < 0 || value > 10)
    throw usage_error("invalid " + std::string(what) + " '" + std::string(text) +
                      "': expected a percentage like 5% or a fraction like 0.05 (0 to 1000%)");
  if (!percent && value > 1)  // "5" is a typo for 5% far more often than a 500% tolerance
    throw usage_error("invalid " + std::string(what) + " '" + std::string(text) +
                      "': a plain number is a fraction (0.05 = 5%); write " + std::string(s) +
                      "% for a percentage");
  return value;
}

bool MetricRule::matches(std::string_view bench, std::string_view result_name,
                         std::string_view metric_name) const {
  return glob_match(metric, metric_name) && glob_match(benchmark, bench) && glob_match(result, result_name);
}

EffectiveRule CompareRules::resolve(std::string_view bench, std::string_view result_name,
                                    std::string_view metric_name, std::string_view other_name) const {
  EffectiveRule e;
  e.tolerance = tolerance;
  for (const auto& r : rules) {
    if (!r.matches(bench, result_name, metric_name) &&
        (other_name.empty() || !r.matches(bench, other_name, metric_name)))
      continue;
    if (r.tolerance) e.tolerance = *r.tolerance;
    if (r.abs_tolerance) e.abs_tolerance = r.abs_tolerance;
    if (r.min) e.min = r.min;
    if (r.max) e.max = r.max;
    if (r.ignore) e.ignore = *r.ignore;
    // A floor or ceiling after an ignore gates the metric again: appending "gemm/* mfu >= 0.5" to rules
    // that ignore gemm's mfu must not leave the new gate silently off.
    if ((r.min || r.max) && !r.ignore) e.ignore = false;
  }
  return e;
}

MetricRule parse_bound_rule(std::string_view text, const std::string& where) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  const auto bad = [&](const std::string& why) -> MetricRule {
    throw input_error(where + ": " + why + " in \"" + std::string(text) +
                      "\" (expected \"[BENCHMARK/RESULT] METRIC >= NUMBER\" or \"... <= NUMBER\")");
  };
  if (words.size() != 3 && words.size() != 4) return bad("expected 3 or 4 words");
  const std::size_t op_at = words.size() - 2;
  const std::string& op = words[op_at];
  if (op != ">=" && op != "<=") return bad("unknown comparison '" + op + "'");
  const auto bound = parse_double(words.back());
  if (!bound) return bad("'" + words.back() + "' is not a number");
  MetricRule r;
  r.where = where;
  r.metric = words[op_at - 1];
  if (words.size() == 4) {
    const std::string& scope = words[0];
    const auto slash = scope.find('/');
    r.benchmark = scope.substr(0, slash);
    if (slash != std::string::npos) r.result = scope.substr(slash + 1);
    if (r.benchmark.empty() || r.result.empty()) return bad("empty benchmark or result pattern");
  }
  (op == ">=" ? r.min : r.max) = *bound;
  return r;
}

CompareRules compare_rules_from_json(const nlohmann::json& j, const std::string& source) {
  const Node root{{j, "$", source}};
  if (!j.is_object()) root.fail("expected an object");
  CompareRules rules;
  for (const auto& [key, value] : j.items()) {
    const Node field = root.child(value, "$." + key);
    if (key == "tolerance") {
      rules.tolerance = field.tolerance();
    } else if (key == "noise_sigmas") {
      rules.noise_sigmas = field.number();
      // Beyond a few sigmas the band swallows any change and every metric reads AMBIGUOUS: a gate that passes
      // everything.
      if (!(rules.noise_sigmas >= 0 && rules.noise_sigmas <= 10))
        field.fail(
            fmt::format("expected a number of standard deviations in [0, 10], got {:g}", rules.noise_sigmas));
    } else if (key == "max_noise") {
      rules.max_noise = field.tolerance();
    } else if (key == "fail_on_missing") {
      rules.fail_on_missing = field.boolean();
    } else if (key == "rules") {
      if (!value.is_array()) field.fail("expected an array of rule objects or strings");
      for (std::size_t i = 0; i < value.size(); ++i) {
        const Node item = field.at(i);
        if (item.j.is_string())
          rules.rules.push_back(parse_bound_rule(item.j.get<std::string>(), source + ": " + item.path));
        else if (item.j.is_object())
          rules.rules.push_back(rule_from_object(item));
        else
          item.fail("expected a rule object or a string like \"mfu >= 0.45\"");
      }
    } else if (key == "$comment" || key == "description") {
      // free text for the humans who maintain the file
    } else {
      field.fail(
          "unknown field (known: tolerance, noise_sigmas, max_noise, fail_on_missing, rules, description)");
    }
  }
  return rules;
}

CompareRules read_compare_rules(const std::filesystem::path& path) {
  return compare_rules_from_json(read_json_file(path), path.string());
}

}  // namespace fb::reports
