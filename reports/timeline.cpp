#include "reports/timeline.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "reports/json_fields.hpp"
#include "reports/timeline_extra.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

// Where spans overlap (a save during a step, a failure inside a step), the earlier category in this list
// wins; time covered by none is "other".
enum Cat { kDetection, kRestore, kSave, kInit, kWasted, kProductive, kRelaunch, kCats };
const std::array<std::string, kCats> kNames = {"detection", "ckpt_restore", "ckpt_save", "init",
                                               "wasted",    "productive",   "relaunch"};

struct Interval {
  double begin, end;
  int cat;
};

double num(const json& e, const char* key, double fallback) {
  return e.contains(key) && e[key].is_number() ? e[key].get<double>() : fallback;
}

}  // namespace

const std::vector<std::string>& timeline_categories() {
  static const std::vector<std::string> kOrder = {"productive",   "init",     "ckpt_save",
                                                  "ckpt_restore", "wasted",   "detection",
                                                  "relaunch",     "slowdown", "other"};
  return kOrder;
}

Timeline timeline_from_events(const json& events) {
  Timeline tl;
  if (!events.is_array() || events.empty()) return tl;
  std::vector<Interval> iv;
  struct Step {
    long long step;
    double begin, end;
    bool wasted;
  };
  std::vector<Step> steps;
  std::vector<std::size_t> kept;
  const double none = std::numeric_limits<double>::quiet_NaN();
  double t0 = std::numeric_limits<double>::infinity(), t_end = -t0;
  double attempt_begin = none, last = none, pending_relaunch = none, last_fault = none, restore_start = none;
  bool attempt_failed = false;
  bool relaunched = false;  // a relaunch event followed the last fatal failure
  // The latest fatal fault injected in this attempt, of each kind (as the ledger: docs/metrics.md).
  std::map<std::string, double> fault_at_by_kind;
  const auto rollback_to = [&](long long step) {
    while (!kept.empty() && steps[kept.back()].step > step) {
      steps[kept.back()].wasted = true;
      kept.pop_back();
    }
  };
  for (const auto& e : events) {
    if (!e.is_object() || !e.contains("t") || !e["t"].is_number()) continue;
    const double t = e["t"].get<double>();
    const std::string type = string_field(e, "type");
    t0 = std::min(t0, t);
    t_end = std::max(t_end, t);
    if (std::isnan(last)) last = attempt_begin = t;
    if (type == "job_start") {
      attempt_begin = last = t;
    } else if (type == "attempt_start") {
      if (!std::isnan(pending_relaunch)) iv.push_back({pending_relaunch, t, kRelaunch});
      pending_relaunch = last_fault = restore_start = none;
      fault_at_by_kind.clear();
      attempt_begin = last = t;
      attempt_failed = relaunched = false;
    } else if (type == "init_done") {
      iv.push_back({attempt_begin, t, kInit});
      last = t;
    } else if (type == "ckpt_restore_start") {
      restore_start = t;
    } else if (type == "ckpt_restore_end") {
      iv.push_back({std::isnan(restore_start) ? t - num(e, "seconds", 0) : restore_start, t, kRestore});
      rollback_to(static_cast<long long>(num(e, "step", 0)));
      last = t;
    } else if (type == "step") {
      const auto step = static_cast<long long>(num(e, "step", 0));
      rollback_to(step - 1);
      steps.push_back({step, num(e, "t_start", last), t, false});
      kept.push_back(steps.size() - 1);
      last = t;
    } else if (type == "ckpt_save_end") {
      iv.push_back({num(e, "t_start", t - num(e, "seconds", 0)), t, kSave});
      last = t;
    } else if (type == "fault_injected") {
      if (const auto kind = string_field(e, "kind");
          kind == "crash" || kind == "hang" || kind == "sdc" || kind == "nan")  // the fatal kinds
        last_fault = fault_at_by_kind[kind] = t;
      std::string label =
          "fault injected: " + (string_field(e, "kind").empty() ? std::string("?") : string_field(e, "kind"));
      if (e.contains("rank") && e["rank"].is_number_integer())
        label += fmt::format(" on rank {}", e["rank"].get<int>());
      tl.markers.push_back({t, label});
    } else if (type == "failure_detected") {
      const bool fatal = !(e.contains("fatal") && e["fatal"].is_boolean() && !e["fatal"].get<bool>());
      tl.markers.push_back(
          {t, "failure detected: " + string_field(e, "kind") +
                  (string_field(e, "how").empty() ? "" : " (" + string_field(e, "how") + ")")});
      if (!fatal || attempt_failed) continue;
      attempt_failed = true;
      const auto same_kind = fault_at_by_kind.find(string_field(e, "kind"));
      const double injected = same_kind != fault_at_by_kind.end() ? same_kind->second : last_fault;
      const double failed_at = std::min(num(e, "failed_at", std::isnan(injected) ? last : injected), t);
      if (last < failed_at) iv.push_back({last, failed_at, kWasted});
      iv.push_back({std::max(failed_at, last), t, kDetection});
      pending_relaunch = last = t;
      relaunched = false;
    } else if (type == "relaunch") {
      relaunched = true;
    } else if (type == "attempt_end" && string_field(e, "reason") == "drain") {
      pending_relaunch = t;  // stopped for a drain: the gap to the next attempt is its relaunch
      relaunched = false;
    } else if (type == "drain" || type == "straggler_detected") {
      tl.markers.push_back(
          {t, type + (e.contains("rank") ? fmt::format(" (rank {})", e["rank"].dump()) : "")});
    } else if (type == "job_end") {
      t_end = t;
    }
  }
  if (!std::isfinite(t0)) return tl;
  // Nothing relaunched after the last failure (the restart limit): the rest is other, as in the ledger.
  if (!std::isnan(pending_relaunch) && relaunched) iv.push_back({pending_relaunch, t_end, kRelaunch});
  for (const auto& s : steps) iv.push_back({s.begin, s.end, s.wasted ? kWasted : kProductive});

  // Sweep: each elementary segment goes to the highest-priority open category, else "other".
  std::vector<std::pair<double, int>> edges;
  for (const auto& i : iv) {
    const double b = std::clamp(i.begin, t0, t_end), en = std::clamp(i.end, t0, t_end);
    if (en > b) {
      edges.emplace_back(b, i.cat + 1);
      edges.emplace_back(en, -(i.cat + 1));
    }
  }
  std::sort(edges.begin(), edges.end());
  std::array<int, kCats> open{};
  double prev = t0;
  const auto emit = [&](double b, double en, const std::string& cat) {
    if (en <= b) return;
    if (!tl.spans.empty() && tl.spans.back().category == cat &&
        std::fabs(tl.spans.back().end_s - (b - t0)) < 1e-9)
      tl.spans.back().end_s = en - t0;
    else
      tl.spans.push_back({b - t0, en - t0, cat});
  };
  const auto current = [&]() -> std::string {
    for (int c = 0; c < kCats; ++c)
      if (open[c] > 0) return kNames[c];
    return "other";
  };
  for (const auto& [time, code] : edges) {
    if (time > prev) {
      emit(prev, time, current());
      prev = time;
    }
    open[std::abs(code) - 1] += code > 0 ? 1 : -1;
  }
  emit(prev, t_end, "other");
  for (auto& m : tl.markers) m.t_s -= t0;
  return tl;
}

namespace {

// An explicit list of spans ([{start_s, end_s, category}], reports/timeline_extra.hpp) as a timeline.
std::optional<Timeline> explicit_timeline(std::optional<std::vector<svg::Span>> spans) {
  if (!spans) return std::nullopt;
  Timeline tl;
  tl.spans = std::move(*spans);
  return tl;
}

}  // namespace

std::vector<Timeline> job_timelines(const json& events) {
  std::vector<Timeline> out;
  if (!events.is_array()) return out;
  json job = json::array();
  bool started = false;  // this job has its job_start
  const auto flush = [&] {
    Timeline tl = timeline_from_events(job);
    if (!tl.spans.empty()) out.push_back(std::move(tl));
    job = json::array();
  };
  for (const auto& e : events) {
    if (e.is_object() && string_field(e, "type") == "job_start") {
      if (started || !job.empty()) flush();  // a first job whose job_start is missing is a job all the same
      started = true;
    }
    job.push_back(e);
  }
  flush();
  return out;
}

std::vector<Timeline> report_timelines(const Report& report) {
  if (report.summary.is_object() && report.summary.contains("timeline"))
    if (auto tl = explicit_timeline(parse_timeline_spans(report.summary["timeline"]))) return {*tl};
  std::vector<Timeline> out;
  for (const auto& r : report.results)
    if (auto tl = explicit_timeline(find_timeline_extra(r))) out.push_back(std::move(*tl));
  if (!out.empty()) return out;
  return job_timelines(report.events);
}

}  // namespace fb::reports
