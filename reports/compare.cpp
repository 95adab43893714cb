#include "reports/compare.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "reports/json_fields.hpp"
#include "reports/work_parameters.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

constexpr std::string_view kVerdictNames[kVerdictCount] = {"SAME", "BETTER",  "WORSE", "AMBIGUOUS",
                                                           "INFO", "MISSING", "NEW"};

// "5%", "2.5%", "0.1%".
std::string percent(double fraction) {
  return fmt::format("{:.3g}%", fraction * 100.0);
}

// A configured tolerance as given (19.99%, 1000%): rounded to 3 figures it read "-20.0% beyond ±20%" beside
// "-20.0% within ±20%", and 1000% as 1e+03%.
std::string tolerance_percent(double fraction) {
  return fmt::format("{:.6g}%", fraction * 100.0);
}

// Spread of the samples behind a metric, in its unit; nullopt without at least two samples.
std::optional<double> sigma_of(const Metric& m) {
  if (!m.stats || m.stats->n < 2) return std::nullopt;
  if (std::isfinite(m.stats->stddev) && m.stats->stddev > 0) return m.stats->stddev;
  if (std::isfinite(m.stats->max) && std::isfinite(m.stats->min)) return (m.stats->max - m.stats->min) / 4.0;
  return std::nullopt;
}

// `v` beside a bound it differs from, with the digits that show the difference: 0.4499996 against a floor
// of 0.45 read "0.45 below floor 0.45".
std::string format_value_apart(double v, double bound) {
  std::string s = format_value(v);
  if (v == bound || !std::isfinite(v) || !std::isfinite(bound) || s != format_value(bound)) return s;
  for (int digits = 5; digits <= 17; ++digits)
    if (s = fmt::format("{:.{}g}", v, digits); s != fmt::format("{:.{}g}", bound, digits)) return s;
  return s;
}

// A change beyond the tolerance, with the decimals that show it beyond: -4.9999% of a 94.99995 against 100
// read "-5.0% beyond ±5%".
std::string format_change_beyond(double change, double tolerance) {
  std::string s = format_change(change);
  const double pct = std::fabs(change * 100.0), limit = tolerance * 100.0;
  if (!std::isfinite(pct) || pct >= 1e6) return s;
  for (int decimals = 1; decimals <= 12; ++decimals) {
    const double scale = std::pow(10.0, decimals);
    if (std::round(pct * scale) / scale > limit) return fmt::format("{:+.{}f}%", change * 100.0, decimals);
  }
  return s;
}

std::string result_key(const Result& r) {
  return r.benchmark + '\x1f' + r.name;
}

// Metric lookup by name that stays fast for results with many metrics.
class MetricIndex {
 public:
  explicit MetricIndex(const Result& r) : r_(r) {
    if (r.metrics.size() > 16)
      for (std::size_t i = 0; i < r.metrics.size(); ++i) map_.emplace(r.metrics[i].first, i);
  }
  const Metric* find(const std::string& name) const {
    if (map_.empty()) return r_.metric(name);
    const auto it = map_.find(name);
    return it == map_.end() ? nullptr : &r_.metrics[it->second].second;
  }

 private:
  const Result& r_;
  std::unordered_map<std::string, std::size_t> map_;
};

// A reference's `params.match_params` names what a result matched by `params.match` must also have: NeMo's
// TFLOP/s count full s² attention, so a run that counts causal attention is another measure of the same work.
// Empty when they agree, else which parameter differs.
std::string params_mismatch(const Result& ref, const Result& cand) {
  if (!ref.params.is_object() || !ref.params.contains("match_params")) return {};
  const json& want = ref.params.at("match_params");
  if (!want.is_object()) return {};
  for (const auto& [key, value] : want.items()) {
    const json* got = cand.params.is_object() && cand.params.contains(key) ? &cand.params.at(key) : nullptr;
    if (got && *got == value) continue;
    return fmt::format("{} has params.{} {} where the reference needs {}", cand.name, key,
                       got ? got->dump() : std::string("unset"), value.dump());
  }
  return {};
}

std::string first_device(const Report& r) {
  const json& ranks = r.system.is_object() ? r.system.value("ranks", json::array()) : json::array();
  if (ranks.is_array() && !ranks.empty() && ranks[0].is_object() && ranks[0].contains("device") &&
      ranks[0]["device"].is_object())
    return field_text(ranks[0]["device"], "name");
  return field_text(r.system, "device");
}

void apply_bounds(MetricComparison& row, const EffectiveRule& rule) {
  row.min = rule.min;
  row.max = rule.max;
  if (!row.candidate || (!rule.min && !rule.max)) return;
  const double c = *row.candidate;
  auto append = [&](const std::string& s) { row.reason = row.reason.empty() ? s : row.reason + "; " + s; };
  if (rule.min && !(c >= *rule.min)) {
    row.verdict = Verdict::worse;
    row.reason = fmt::format("{} below floor {}", format_value_apart(c, *rule.min), format_value(*rule.min));
  } else if (rule.max && !(c <= *rule.max)) {
    row.verdict = Verdict::worse;
    row.reason =
        fmt::format("{} above ceiling {}", format_value_apart(c, *rule.max), format_value(*rule.max));
  } else if (rule.min && rule.max) {
    append(fmt::format("within [{}, {}]", format_value(*rule.min), format_value(*rule.max)));
  } else if (rule.min) {
    append(fmt::format("meets floor >= {}", format_value(*rule.min)));
  } else {
    append(fmt::format("meets ceiling <= {}", format_value(*rule.max)));
  }
}

}  // namespace

std::string_view to_string(Verdict v) {
  return kVerdictNames[static_cast<std::size_t>(v)];
}

std::string format_value(double v) {
  if (!std::isfinite(v)) return "null";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  // Beyond that, every digit is noise to a reader (a 405B model's FLOPs per step; 1e308 is 309 digits).
  if (std::fabs(v) >= 1e15) return fmt::format("{:.6g}", v);
  if (std::fabs(v) >= 1000) return fmt::format("{:.1f}", v);
  return fmt::format("{:.4g}", v);
}

std::string format_change(double change) {
  const double pct = change * 100.0;
  if (!std::isfinite(pct)) return pct > 0 ? "+inf" : "-inf";
  // A million percent is a unit mix-up or a broken run; its digits would fill the line (1e308 is 309).
  if (std::fabs(pct) >= 1e6) return fmt::format("{:+.3g}%", pct);
  return fmt::format("{:+.1f}%", pct);
}

std::string format_ratio(double ratio) {
  if (!std::isfinite(ratio)) return "-";
  if (ratio != 0 && (std::fabs(ratio) >= 1e6 || std::fabs(ratio) < 1e-3)) return fmt::format("{:.3g}", ratio);
  return fmt::format("{:.3f}", ratio);
}

std::array<std::size_t, kVerdictCount> Comparison::counts() const {
  std::array<std::size_t, kVerdictCount> c{};
  for (const auto& r : rows) ++c[static_cast<std::size_t>(r.verdict)];
  return c;
}

std::size_t Comparison::failures() const {
  std::size_t n = 0;
  for (const auto& r : rows) n += r.fails ? 1 : 0;
  return n;
}

std::string Comparison::summary_line() const {
  const auto c = counts();
  std::string s = fmt::format("{} metric{} compared:", rows.size(), rows.size() == 1 ? "" : "s");
  bool any = false;
  for (std::size_t i = 0; i < kVerdictCount; ++i) {
    if (!c[i]) continue;
    s += fmt::format("{} {} {}", any ? "," : "", c[i], kVerdictNames[i]);
    any = true;
  }
  if (!any) s += " none";
  return s;
}

MetricVerdict judge_metric(const Metric& baseline, const Metric& candidate, const EffectiveRule& rule,
                           double noise_sigmas, double max_noise) {
  MetricVerdict v;
  const double b = baseline.value, c = candidate.value;
  const bool directed = baseline.better != Better::none;
  if (!std::isfinite(c) || !std::isfinite(b)) {
    // A measurement that produced no number is a regression, also when the baseline had none either
    // (else a broken measurement would pass for as long as it stays broken).
    if (!directed) {
      v.verdict = Verdict::info;
    } else if (!std::isfinite(c)) {
      v.verdict = Verdict::worse;
    } else {
      v.verdict = Verdict::ambiguous;
    }
    v.reason = !std::isfinite(c) ? (std::isfinite(b) ? "candidate value is null"
                                                     : "candidate value is null (and baseline value)")
                                 : "baseline value is null";
    return v;
  }
  if (b == 0) {
    if (c == 0) {
      v.change = 0.0;
    } else {
      v.change = c > 0 ? INFINITY : -INFINITY;
    }
  } else {
    v.change = (c - b) / std::fabs(b);
  }
  const double change = *v.change;
  if (const auto sb = sigma_of(baseline), sc = sigma_of(candidate); sb && sc && b != 0)
    // Relative first: squaring 1e300-sized spreads overflowed to an infinite band (a pass), 1e-200 ones
    // underflowed to none.
    v.noise = noise_sigmas * std::hypot(*sb / std::fabs(b), *sc / std::fabs(b));

  if (!directed) {
    v.verdict = Verdict::info;
    v.reason = "no direction (better = none)";
    return v;
  }
  // Same rounding allowance as the relative test below: 0.010 → 0.012 against 0.002 s is within it.
  if (rule.abs_tolerance && std::fabs(c - b) <= *rule.abs_tolerance * (1 + 1e-9) + 1e-300 &&
      std::fabs(change) > rule.tolerance * (1 + 1e-9) + 1e-12) {
    v.verdict = Verdict::same;
    v.reason = fmt::format("{}{} within ±{:g}{} absolute tolerance", c >= b ? "+" : "", format_value(c - b),
                           *rule.abs_tolerance, baseline.unit.empty() ? "" : " " + baseline.unit);
    return v;
  }
  // A change of exactly the tolerance is within it: 458.5 → 435.575 computes as -5.000000000000004%.
  if (std::fabs(change) <= rule.tolerance * (1 + 1e-9) + 1e-12) {
    v.verdict = Verdict::same;
    v.reason = "within ±" + tolerance_percent(rule.tolerance) + " tolerance";
    return v;
  }
  if (v.noise && std::fabs(change) <= *v.noise) {
    if (*v.noise <= max_noise) {
      v.verdict = Verdict::same;
      v.reason = "within noise ±" + percent(*v.noise);
    } else {
      v.verdict = Verdict::ambiguous;
      v.reason = fmt::format("{} beyond ±{} tolerance but within noise ±{} (over max_noise {})",
                             format_change_beyond(change, rule.tolerance), tolerance_percent(rule.tolerance),
                             percent(*v.noise), percent(max_noise));
    }
    return v;
  }
  const bool improved = (baseline.better == Better::higher) == (change > 0);
  v.verdict = improved ? Verdict::better : Verdict::worse;
  v.reason = b == 0 ? std::string("baseline is 0")
                    : fmt::format("{} beyond ±{} tolerance", format_change_beyond(change, rule.tolerance),
                                  tolerance_percent(rule.tolerance));
  if (v.noise) v.reason += " and noise ±" + percent(*v.noise);
  return v;
}

CompareSide describe_side(const Report& report, const std::string& source) {
  CompareSide side;
  side.source = source;
  // summary is an open object: a field of another type (a hand-edited report) reads as absent.
  const auto text = [&](const char* key) { return string_field(report.summary, key); };
  if (text("kind") == "reference") {
    side.reference = true;
    side.label =
        "published reference: " + (text("title").empty() ? std::string("(untitled)") : text("title"));
    return side;
  }
  std::vector<std::string> parts;
  if (const auto id = field_text(report.run, "id"); !id.empty()) parts.push_back("run " + id);
  if (const auto backend = field_text(report.run, "backend"); !backend.empty())
    parts.push_back(backend + " backend");
  if (report.run.is_object() && report.run.contains("world_size") && report.run["world_size"].is_number()) {
    const int n = report.run["world_size"].get<int>();
    parts.push_back(fmt::format("{} rank{}", n, n == 1 ? "" : "s"));
  }
  if (const auto dev = first_device(report); !dev.empty()) parts.push_back(dev);
  for (const auto& p : parts) side.label += (side.label.empty() ? "" : ", ") + p;
  return side;
}

Comparison compare_reports(const Report& baseline, const Report& candidate, const CompareRules& rules,
                           const std::string& baseline_source, const std::string& candidate_source) {
  Comparison out;
  out.baseline = describe_side(baseline, baseline_source);
  out.candidate = describe_side(candidate, candidate_source);
  out.tolerance = rules.tolerance;
  out.fail_on_missing = rules.fail_on_missing;

  // Differences that make a comparison questionable but not meaningless.
  if (baseline.schema != candidate.schema)
    out.warnings.push_back(
        fmt::format("schema versions differ: baseline {}, candidate {}", baseline.schema, candidate.schema));
  const auto differ = [&](const char* what, const std::string& b, const std::string& c) {
    if (!b.empty() && !c.empty() && b != c)
      out.warnings.push_back(fmt::format("{} differ: baseline {}, candidate {}", what, b, c));
  };
  differ("backends", field_text(baseline.run, "backend"), field_text(candidate.run, "backend"));
  // An import whose source did not say writes world_size null (unknown): nothing to compare.
  const auto world = [](const Report& r) {
    return r.run.is_object() && r.run.contains("world_size") && r.run["world_size"].is_number()
               ? r.run["world_size"].dump()
               : std::string();
  };
  differ("world sizes", world(baseline), world(candidate));
  differ("devices", first_device(baseline), first_device(candidate));

  // Results match by benchmark + name: a name given twice would gate on one copy and call the other new.
  check_unique_results(baseline, baseline_source);
  check_unique_results(candidate, candidate_source);
  std::unordered_map<std::string, std::size_t> cand_index;
  cand_index.reserve(candidate.results.size());
  for (std::size_t i = 0; i < candidate.results.size(); ++i)
    cand_index.emplace(result_key(candidate.results[i]), i);
  std::vector<bool> matched(candidate.results.size(), false);
  std::size_t matched_count = 0;
  // A candidate result a reference's pattern named but whose params differ: why it was not compared.
  std::vector<std::string> unlike_reference(candidate.results.size());
  std::unordered_set<std::string> undirected_warned;  // benchmark + metric, each said once
  std::string params_differ;  // the first result in common whose parameters differ, and how
  std::size_t params_differ_count = 0;

  const auto base_row = [](const Result& r, const std::string& metric) {
    MetricComparison row;
    row.benchmark = r.benchmark;
    row.result = r.name;
    row.metric = metric;
    return row;
  };
  const auto status_row = [&](const Result& r, Verdict verdict, std::string reason) {
    MetricComparison row = base_row(r, "status");
    row.verdict = verdict;
    row.reason = std::move(reason);
    out.rows.push_back(std::move(row));
  };
  const auto skipped_in_candidate = [](const Result& cr) {
    return "skipped in candidate" + (cr.error ? ": " + *cr.error : std::string());
  };
  // `other_name`: the result's name on the other side (a reference matched by pattern), for the rules.
  // `skipped`: a candidate-only result that was skipped: its figures are not measurements.
  const auto only_on_one_side = [&](const Result& r, const std::string& name, const Metric& m,
                                    Verdict verdict, std::string reason, const std::string& other_name = {},
                                    bool skipped = false) {
    const EffectiveRule rule = rules.resolve(r.benchmark, r.name, name, other_name);
    if (rule.ignore) return;
    MetricComparison row = base_row(r, name);
    row.unit = m.unit;
    row.better = m.better;
    row.tolerance = rule.tolerance;
    row.abs_tolerance = rule.abs_tolerance;
    row.verdict = verdict;
    row.reason = std::move(reason);
    if (verdict == Verdict::missing)
      row.baseline = m.value;
    else if (!skipped)
      row.candidate = m.value;
    if (verdict == Verdict::added && !skipped) apply_bounds(row, rule);
    // A floor or ceiling is absolute, whatever the baseline says: a candidate without the figure (metric
    // left out, result skipped or absent) does not meet it.
    if ((verdict == Verdict::missing || skipped) && (rule.min || rule.max)) {
      row.min = rule.min;
      row.max = rule.max;
      row.verdict = Verdict::worse;
      row.reason += rule.min ? fmt::format("; no value to meet floor {}", format_value(*rule.min))
                             : fmt::format("; no value to meet ceiling {}", format_value(*rule.max));
    }
    out.rows.push_back(std::move(row));
  };

  // One baseline result against one candidate result; `label` names the row (the result name, or for a
  // reference matched by pattern "REFERENCE ~ CANDIDATE").
  const auto compare_pair = [&](const Result& br, std::size_t ci, const std::string& label) {
    const Result& cr = candidate.results[ci];
    if (!matched[ci]) ++matched_count;
    matched[ci] = true;
    const std::size_t first_row = out.rows.size();
    const auto relabel = [&] {
      for (std::size_t k = first_row; k < out.rows.size(); ++k) out.rows[k].result = label;
    };

    if (cr.status == Status::skipped) {
      const std::string why = skipped_in_candidate(cr);
      for (const auto& [name, m] : br.metrics) only_on_one_side(br, name, m, Verdict::missing, why, cr.name);
      relabel();
      return;
    }
    // A failed candidate fails the gate, even where the baseline failed too: a gate that passes a failing
    // run as long as the baseline failed the same way would let the failure become the standard.
    if (cr.status == Status::failed)
      status_row(cr, Verdict::worse,
                 std::string(br.status == Status::failed ? "failed in candidate (and in baseline)"
                                                         : "failed in candidate") +
                     (cr.error ? ": " + *cr.error : std::string()));
    else if (br.status == Status::failed)
      status_row(cr, Verdict::better, "failed in baseline, ok in candidate");

    if (!out.baseline.reference && !out.candidate.reference)
      if (const auto d = work_differences(br, cr, 3); d.count > 0) {
        if (params_differ.empty())
          params_differ = fmt::format("{} {}: {}{}", br.benchmark, br.name, d.shown,
                                      d.count > 3 ? fmt::format(" and {} more", d.count - 3) : std::string());
        ++params_differ_count;
      }

    const MetricIndex cand_metrics(cr);
    for (const auto& [name, bm] : br.metrics) {
      const Metric* cm = cand_metrics.find(name);
      if (!cm) {
        if (cr.status != Status::failed)
          only_on_one_side(br, name, bm, Verdict::missing, "metric not in candidate", cr.name);
        continue;
      }
      const EffectiveRule rule = rules.resolve(br.benchmark, br.name, name, cr.name);
      if (rule.ignore) continue;
      const std::string where = fmt::format("{}: $.results[{}].metrics.{}", candidate_source, ci, name);
      if (cm->unit != bm.unit)
        throw input_error(
            fmt::format("{}.unit: \"{}\" but the baseline ({}) has \"{}\": the reports are incompatible",
                        where, cm->unit, baseline_source, bm.unit));
      Metric judged = bm;
      std::string one_sided;  // the row's reason when only one report gives the metric a direction
      if (cm->better != bm.better) {
        if (cm->better != Better::none && bm.better != Better::none)
          throw input_error(
              fmt::format("{}.better: \"{}\" but the baseline ({}) has \"{}\": the reports are incompatible",
                          where, to_string(cm->better), baseline_source, to_string(bm.better)));
        // One side judges the metric and the other gives it no direction (a censored MTTF; a direction a
        // later version dropped): shown, not judged.
        judged.better = Better::none;
        const bool in_baseline = bm.better != Better::none;
        const std::string_view directed = in_baseline ? "baseline" : "candidate";
        const std::string_view direction = to_string(in_baseline ? bm.better : cm->better);
        one_sided = fmt::format("a direction in the {} only ({} is better): not judged", directed, direction);
        if (undirected_warned.insert(br.benchmark + "\n" + name).second)
          out.warnings.push_back(fmt::format(
              "{} {}: the {} says {} is better, the {} gives it no direction: compared, not judged",
              br.benchmark, name, directed, direction, in_baseline ? "candidate" : "baseline"));
      }
      MetricComparison row = base_row(br, name);
      row.unit = bm.unit;
      row.better = judged.better;
      row.baseline = bm.value;
      row.candidate = cm->value;
      row.tolerance = rule.tolerance;
      row.abs_tolerance = rule.abs_tolerance;
      if (std::isfinite(bm.value) && std::isfinite(cm->value) && bm.value != 0)
        row.ratio = cm->value / bm.value;
      const MetricVerdict v = judge_metric(judged, *cm, rule, rules.noise_sigmas, rules.max_noise);
      row.verdict = v.verdict;
      row.change = v.change;
      row.noise = v.noise;
      row.reason = one_sided.empty() ? v.reason : v.change ? one_sided : v.reason + "; " + one_sided;
      apply_bounds(row, rule);
      out.rows.push_back(std::move(row));
    }
    const MetricIndex base_metrics(br);
    for (const auto& [name, cm] : cr.metrics)
      if (!base_metrics.find(name))
        only_on_one_side(cr, name, cm, Verdict::added, "metric not in baseline", br.name);
    relabel();
  };

  std::string first_unlike;  // a reference result that matched ours by name but not by params
  for (std::size_t bi = 0; bi < baseline.results.size(); ++bi) {
    const Result& br = baseline.results[bi];
    const auto it = cand_index.find(result_key(br));
    if (it != cand_index.end()) {
      compare_pair(br, it->second, br.name);
      continue;
    }
    // A published reference names its own setup ("llama3-8b/nemo-24.07/fp8"); `params.match`, a glob over
    // result names of the same benchmark ("llama3-8b/*/fp8/*"), says which of our results it stands for.
    const std::string pattern = string_field(br.params, "match");
    bool any = false;
    std::string unlike;  // why the first result that matched by name was not compared
    if (!pattern.empty())
      for (std::size_t ci = 0; ci < candidate.results.size(); ++ci) {
        const Result& cr = candidate.results[ci];
        if (cr.benchmark != br.benchmark || !glob_match(pattern, cr.name)) continue;
        if (auto why = params_mismatch(br, cr); !why.empty()) {
          if (unlike.empty()) unlike = why;
          if (unlike_reference[ci].empty()) unlike_reference[ci] = br.name + ": " + why;
          continue;
        }
        any = true;
        compare_pair(br, ci, fmt::format("{} ~ {}", br.name, cr.name));
      }
    if (any) continue;
    if (first_unlike.empty() && !unlike.empty()) first_unlike = br.name + ": " + unlike;
    const std::string reason = unlike.empty() ? "result not in candidate" : "not comparable: " + unlike;
    for (const auto& [name, m] : br.metrics) only_on_one_side(br, name, m, Verdict::missing, reason);
    if (br.metrics.empty()) status_row(br, Verdict::missing, reason);
  }

  if (matched_count == 0 && !baseline.results.empty() && !candidate.results.empty())
    throw input_error(
        fmt::format("cannot compare {} with {}: no result in common (results match by benchmark + name; "
                    "baseline has {}/{}, "
                    "candidate has {}/{}){}",
                    baseline_source, candidate_source, baseline.results[0].benchmark,
                    baseline.results[0].name, candidate.results[0].benchmark, candidate.results[0].name,
                    first_unlike.empty() ? "" : "; not comparable: " + first_unlike));
  if (baseline.results.empty() || candidate.results.empty())
    throw input_error(fmt::format("cannot compare {} with {}: {} has no results", baseline_source,
                                  candidate_source,
                                  baseline.results.empty() ? baseline_source : candidate_source));

  for (std::size_t ci = 0; ci < candidate.results.size(); ++ci) {
    if (matched[ci]) continue;
    const Result& cr = candidate.results[ci];
    if (cr.status == Status::failed)
      status_row(cr, Verdict::worse, "failed in candidate" + (cr.error ? ": " + *cr.error : std::string()));
    const bool skipped = cr.status == Status::skipped;
    const std::string reason =
        (unlike_reference[ci].empty() ? std::string("result not in baseline")
                                      : "not comparable with the reference " + unlike_reference[ci]) +
        (skipped ? "; " + skipped_in_candidate(cr) : std::string());
    for (const auto& [name, m] : cr.metrics)
      only_on_one_side(cr, name, m, Verdict::added, reason, {}, skipped);
  }

  if (params_differ_count > 0)
    out.warnings.push_back(fmt::format(
        "parameters differ in {} of the {} result(s) in common ({}{}): their figures may not measure the "
        "same "
        "work",
        params_differ_count, matched_count, params_differ_count > 1 ? "first: " : "", params_differ));

  // A floor or ceiling that matches no metric of the candidate gates nothing: a typo in a name
  // ("colective", "busbw_gpbs") would silently disable it. Said, not failed: a shared rules file may hold
  // floors for benchmarks this pair of reports does not run.
  // Likewise one whose every metric a later rule ignores. A metric of either report counts: a rule may name
  // a published reference's result, and a floor on a metric the candidate lacks fails it.
  for (const auto& rule : rules.rules) {
    if (!rule.min && !rule.max) continue;
    bool matched_any = false, gated_any = false;
    for (const Report* side : {&candidate, &baseline})
      for (const auto& r : side->results)
        for (const auto& [name, m] : r.metrics)
          if (rule.matches(r.benchmark, r.name, name)) {
            matched_any = true;
            gated_any = gated_any || !rules.resolve(r.benchmark, r.name, name).ignore;
          }
    const char* kind = rule.min && rule.max ? "floor and ceiling" : rule.min ? "floor" : "ceiling";
    if (!matched_any)
      out.warnings.push_back(
          fmt::format("{}: the {} rule matches no metric of {} (benchmark '{}', result '{}', metric '{}'): "
                      "it gates nothing",
                      rule.where, kind, candidate_source, rule.benchmark, rule.result, rule.metric));
    else if (!gated_any)
      out.warnings.push_back(fmt::format(
          "{}: the {} rule gates nothing: a later rule ignores every metric it matches (benchmark '{}', "
          "result '{}', metric '{}')",
          rule.where, kind, rule.benchmark, rule.result, rule.metric));
  }

  for (auto& row : out.rows)
    row.fails = row.verdict == Verdict::worse || (row.verdict == Verdict::missing && rules.fail_on_missing);
  // A gate that judged nothing must not pass. Rows of one side only judge nothing unless a floor, a ceiling
  // or --fail-on-missing gates them: a gate whose metrics in common were all ignored, or whose candidate
  // skipped every result in common, passed on the strength of a NEW or MISSING row.
  const bool judged = std::any_of(out.rows.begin(), out.rows.end(), [](const MetricComparison& row) {
    return row.fails || row.min || row.max ||
           (row.verdict != Verdict::added && row.verdict != Verdict::missing);
  });
  if (!judged) {
    std::size_t skipped = 0;
    for (std::size_t ci = 0; ci < candidate.results.size(); ++ci)
      skipped += matched[ci] && candidate.results[ci].status == Status::skipped ? 1 : 0;
    throw input_error(fmt::format(
        "cannot compare {} with {}: nothing to judge: no metric of the {} result(s) in common was compared "
        "({}){}",
        baseline_source, candidate_source, matched_count,
        skipped == matched_count ? "the candidate skipped them"
        : skipped > 0 ? fmt::format("{} skipped in the candidate, the rest ignored by the rules", skipped)
                      : "the rules ignore them",
        out.rows.empty() ? ""
                         : " and the metrics of one report only gate nothing without a floor, a ceiling or "
                           "--fail-on-missing"));
  }
  return out;
}

}  // namespace fb::reports
