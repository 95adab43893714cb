// Headline figures per step: one rule per benchmark kind names the metric that heads it, how the best result
// is picked and which of that result's metrics follow it.
#include "reports/headline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/gpu_slowdown.hpp"
#include "reports/report_view.hpp"
#include "reports/suite_step_extra.hpp"
#include "reports/text_format.hpp"

namespace fb::reports {
namespace {

enum class Pick { highest, lowest, first };

struct HeadlineRule {
  std::string_view benchmark;
  std::string_view metric;  // the figure that heads the step
  Pick pick;
  std::string_view label;                // what the figure is ("" = the metric's label)
  std::array<std::string_view, 3> also;  // metrics of the same result that follow it ("" = none)
  std::string_view name_suffix = "";     // only results whose name ends so
  // Every measured result of the kind carries the figure: where none does, it is said to be missing (health
  // and locate results are of several checks, most without it: their first metric stands instead).
  bool always_carried = true;
  // A failed result's figure first (burnin: the node that mismatched, not a clean one beside it).
  bool failed_first = false;
};

// gemm: the fastest shape and its MFU; attention: the fastest shape's fwd+bwd TFLOP/s, its MFU and each
// direction; collective: the peak bus bandwidth (nccl-tests' busbw); train: the step's MFU; resilience:
// goodput and ETTR; simulate: the lowest projected goodput of its scenarios (a sweep's largest size, whose
// name the line gives); mlperf: the score (the MLCommons summarizer's
// mean), else the first run; health: the rank furthest below its GEMM expectation (the verdict's figure),
// else the slowest rank's GEMM; burnin: the first failed node's TFLOP/s and SDC mismatches, else the first
// node's; locate: the median point-to-point
// bandwidth. A benchmark's rules are tried in order until one finds its figure.
constexpr std::array kRules{
    HeadlineRule{"gemm", "tflops", Pick::highest, "peak", {"mfu", "", ""}},
    HeadlineRule{"attention", "tflops", Pick::highest, "peak", {"mfu", "forward_tflops", "backward_tflops"}},
    HeadlineRule{"collective", "busbw_gbps", Pick::highest, "peak busbw", {"", "", ""}},
    HeadlineRule{"train", "mfu", Pick::first, "", {"step_time_s", "model_tflops_per_gpu", "loss"}},
    HeadlineRule{"resilience", "goodput_pct", Pick::first, "", {"ettr", "failures", "mttf_s"}},
    HeadlineRule{"simulate", "goodput_pct", Pick::lowest, "", {"ettr", "job_mtbf_h", ""}},
    HeadlineRule{"mlperf", "time_to_train_min", Pick::first, "score", {"", "", ""}, "/score"},
    HeadlineRule{"mlperf", "time_to_train_min", Pick::first, "", {"", "", ""}},
    HeadlineRule{"health",
                 "expected_fraction",
                 Pick::lowest,
                 "slowest GEMM vs expected",
                 {"tflops", "", ""},
                 "",
                 false},
    HeadlineRule{"health", "tflops", Pick::lowest, "slowest GEMM", {"", "", ""}, "", false},
    HeadlineRule{"burnin", "tflops", Pick::first, "GEMM", {"sdc_mismatches", "gemms", ""}, "", true, true},
    HeadlineRule{
        "locate", "p2p_bw_gbps", Pick::first, "", {"p2p_min_bw_gbps", "flagged_directions", ""}, "", false},
};

// Short labels for the figures a headline shows; other metrics keep their names.
std::string_view label_of(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 11> kLabels{{
      {"mfu", "MFU"},
      {"step_time_s", "step"},
      {"model_tflops_per_gpu", "per GPU"},
      {"goodput_pct", "goodput"},
      {"ettr", "ETTR"},
      {"mttf_s", "MTTF"},
      {"job_mtbf_h", "job MTBF"},
      {"forward_tflops", "fwd"},
      {"backward_tflops", "bwd"},
      {"time_to_train_min", "time to train"},
      {"failures", "failures"},
  }};
  for (const auto& [key, label] : kLabels)
    if (key == name) return label;
  return name;
}

std::string metric_text(std::string_view name, const Metric& m, std::string_view label_given = "") {
  const std::string_view label = label_given.empty() ? label_of(name) : label_given;
  if (!std::isfinite(m.value)) return fmt::format("{} n/a", label);
  if (m.unit == "fraction") return fmt::format("{} {:.1f}%", label, 100 * m.value);
  if (m.unit == "%") return fmt::format("{} {:.1f}%", label, m.value);
  if (m.unit == "count" && std::fabs(m.value) < 1e15)
    return fmt::format("{} {:.0f}", label, m.value);  // 29910
  // A time in the unit that reads at a glance: "step 177 ms", "MTTF 3.09 h" (not 1.112e+04 s).
  if (m.unit == "s" && m.value >= 0) return fmt::format("{} {}", label, format_duration(m.value));
  const bool unitless = m.unit == "value" || m.unit == "score" || m.unit.empty();
  return fmt::format("{} {:.4g}{}", label, m.value, unitless ? "" : " " + m.unit);
}

// Aggregated rows (avg_busbw) carry no shape: the peak is taken over measured sizes only.
bool is_aggregate(const Result& r) {
  return r.name.find("avg_busbw") != std::string::npos;
}

// The result a rule picks, and its figure: ok results first; when none carries the figure, a failed one that
// does (a failed resilience run's goodput matters more than any other figure of it); a failed_first rule
// the other way round.
std::pair<const Result*, const Metric*> pick(const HeadlineRule& rule,
                                             const std::vector<const Result*>& results) {
  const Result* best = nullptr;
  const Metric* head = nullptr;
  const Status first_pass = rule.failed_first ? Status::failed : Status::ok;
  for (const bool first_only : {true, false}) {
    for (const Result* r : results) {
      const Metric* m = r->metric(rule.metric);
      // A null (non-finite) figure is no headline: it would read "n/a" and, first, beat every real one.
      if (!m || !std::isfinite(m->value) || (first_only && r->status != first_pass) || is_aggregate(*r) ||
          !r->name.ends_with(rule.name_suffix))
        continue;
      if (!best || (rule.pick == Pick::highest && m->value > head->value) ||
          (rule.pick == Pick::lowest && m->value < head->value))
        best = r, head = m;
      if (rule.pick == Pick::first) break;
    }
    if (best) break;
  }
  return {best, head};
}

}  // namespace

std::vector<std::string> headline_metrics(const std::string& benchmark) {
  std::vector<std::string> out;
  const auto rule = std::find_if(kRules.begin(), kRules.end(),
                                 [&](const HeadlineRule& r) { return r.benchmark == benchmark; });
  if (rule == kRules.end()) return out;
  out.emplace_back(rule->metric);
  for (std::string_view name : rule->also)
    if (!name.empty()) out.emplace_back(name);
  return out;
}

namespace {

std::string figure_for(const std::vector<const Result*>& results) {
  for (const auto& rule : kRules) {
    if (rule.benchmark != results.front()->benchmark) continue;
    const auto [best, head] = pick(rule, results);
    if (!best) continue;
    std::string out = fmt::format("{} ({})", metric_text(rule.metric, *head, rule.label), best->name);
    for (std::string_view name : rule.also) {
      if (name.empty()) continue;
      if (const Metric* m = best->metric(name)) out += ", " + metric_text(name, *m);
    }
    return out;
  }
  // A kind with rules whose figure no result carries (train without a known peak has no MFU): the figure is
  // said to be missing, and the first result's other headline metrics follow, rather than a constant of the
  // run (its FLOP count) standing in for it. A dry run (params.dry_run) measured nothing: its plan is said as
  // such.
  const Result* first = nullptr;
  for (const Result* r : results)
    if (!r->metrics.empty() && (!first || (first->status != Status::ok && r->status == Status::ok)))
      first = r;
  if (!first) return "";
  const bool dry_run = is_dry_run(*first);
  const auto rule = std::find_if(kRules.begin(), kRules.end(), [&](const HeadlineRule& x) {
    return x.benchmark == first->benchmark && first->name.ends_with(x.name_suffix);
  });
  if (rule != kRules.end() && rule->always_carried && !dry_run) {
    std::string out =
        fmt::format("{} n/a ({})", rule->label.empty() ? label_of(rule->metric) : rule->label, first->name);
    for (std::string_view name : rule->also)
      if (const Metric* m = name.empty() ? nullptr : first->metric(name)) out += ", " + metric_text(name, *m);
    return out;
  }
  // No rule: the first metric by name. By name, not by position: a report read back from JSON lists its
  // metrics sorted, and the live one in the order they were set; both must print the same line.
  const auto& first_named = *std::min_element(first->metrics.begin(), first->metrics.end(),
                                              [](const auto& a, const auto& b) { return a.first < b.first; });
  return fmt::format("{}{} ({})", dry_run ? "dry run, planned " : "",
                     metric_text(first_named.first, first_named.second), first->name);
}

std::string step_of(const Result& r) {
  return find_suite_step(r).value_or(r.benchmark);
}

}  // namespace

std::vector<Headline> headlines(const Report& report) {
  std::vector<std::string> order;
  std::vector<std::vector<const Result*>> groups;
  for (const auto& r : report.results) {
    const std::string step = step_of(r);
    auto it = std::find(order.begin(), order.end(), step);
    if (it == order.end()) {
      order.push_back(step);
      groups.emplace_back();
      it = order.end() - 1;
    }
    groups[static_cast<std::size_t>(it - order.begin())].push_back(&r);
  }
  std::vector<Headline> out;
  for (std::size_t i = 0; i < order.size(); ++i) {
    Headline h;
    h.step = order[i];
    h.results = groups[i].size();
    std::size_t skipped = 0;
    for (const Result* r : groups[i]) {
      if (r->status == Status::failed) {
        if (h.failed++ == 0) h.reason = r->name + ": " + r->error.value_or("failed");
      }
      skipped += r->status == Status::skipped ? 1 : 0;
    }
    h.verdict = h.failed ? "FAILED" : skipped == h.results ? "skipped" : "ok";
    if (!h.failed && skipped == h.results && groups[i].front()->error) h.reason = *groups[i].front()->error;
    h.figure = figure_for(groups[i]);
    // A throttled GPU during the step: its figure is not the hardware's best (the JSON alone said so).
    std::set<std::string> reasons;
    std::set<std::size_t> ranks;
    bool ranks_known = true;
    for (const Result* r : groups[i])
      if (const auto s = find_gpu_slowdown(*r)) {
        reasons.insert(s->reasons.begin(), s->reasons.end());
        ranks.insert(s->ranks.begin(), s->ranks.end());
        ranks_known = ranks_known && !s->ranks.empty();
      }
    if (!reasons.empty())
      h.figure += (h.figure.empty() ? "" : "; ") +
                  ("GPU slowdown: " +
                   slowdown_text({{reasons.begin(), reasons.end()},
                                  ranks_known ? std::vector<std::size_t>(ranks.begin(), ranks.end())
                                              : std::vector<std::size_t>{}}));
    out.push_back(std::move(h));
  }
  return out;
}

std::string render_headlines(const std::vector<Headline>& lines) {
  std::size_t width = 4;
  // Names and errors come from reports: one line each, whatever they hold.
  for (const auto& h : lines) width = std::max(width, display_width(terminal_text(h.step)));
  std::string out;
  for (const auto& h : lines) {
    out += fmt::format("  {}  {}  {}", pad_right(terminal_text(h.step), width), pad_right(h.verdict, 7),
                       terminal_text(h.figure));
    if (h.failed)
      out += fmt::format("  [{} of {} failed: {}]", h.failed, h.results, terminal_text(h.reason));
    else if (!h.reason.empty())
      out += fmt::format("[{}]", terminal_text(h.reason));  // a skipped step: why (its figure is empty)
    out += "\n";
  }
  return out;
}

}  // namespace fb::reports
