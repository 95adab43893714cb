#include "resilience/goodput_ledger.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/statistics.hpp"
#include "resilience/event_log.hpp"

namespace fb::resilience {
namespace {

enum Category {
  kSave,
  kRestore,
  kProductive,
  kWasted,
  kInit,
  kDetection,
  kPartial,
  kRelaunch,
  kCategoryCount
};
// Overlaps are resolved by this order (first wins): a blocking save inside a step window counts as save.

struct Interval {
  double begin, end;
  Category category;
};

class Reader {
 public:
  Reader(const nlohmann::json& e, std::size_t index) : e_(e), index_(index) {}
  double number(const char* key) const {
    if (!e_.contains(key) || !e_[key].is_number())
      throw input_error(
          fmt::format("event log: event {} ({}): '{}' must be a number", index_, e_.value("type", "?"), key));
    return e_[key].get<double>();
  }
  double number_or(const char* key, double fallback) const {
    return e_.contains(key) && e_[key].is_number() ? e_[key].get<double>() : fallback;
  }
  std::string text_or(const char* key, const std::string& fallback) const {
    return e_.contains(key) && e_[key].is_string() ? e_[key].get<std::string>() : fallback;
  }
  bool flag_or(const char* key, bool fallback) const {
    return e_.contains(key) && e_[key].is_boolean() ? e_[key].get<bool>() : fallback;
  }

 private:
  const nlohmann::json& e_;
  std::size_t index_;
};

struct StepRecord {
  std::int64_t step;
  double begin, end;
  bool wasted = false;
};

}  // namespace

bool is_fatal_fault_kind(std::string_view kind) {
  return kind == "crash" || kind == "hang" || kind == "sdc" || kind == "nan";
}

double Badput::total() const {
  return productive_s + slowdown_s + init_s + ckpt_save_s + ckpt_restore_s + wasted_s + detection_s +
         relaunch_s + other_s;
}

std::vector<std::pair<std::string, double>> Badput::items() const {
  const std::array<double, kWallTimeParts.size()> seconds{productive_s, slowdown_s,     init_s,
                                                          ckpt_save_s,  ckpt_restore_s, wasted_s,
                                                          detection_s,  relaunch_s,     other_s};
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t i = 0; i < seconds.size(); ++i) out.emplace_back(kWallTimeParts[i], seconds[i]);
  return out;
}

namespace {

// NaN = none. (std::optional<double> in this state trips GCC 12's -Wmaybe-uninitialized.)
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// Seconds per category: each elementary segment of [t0, t_end] goes to the first category covering it
// (the enum's order); `covered` is what any category covers, the rest is "other".
struct Split {
  std::array<double, kCategoryCount> seconds{};
  double covered = 0;
};

Split sweep(const std::vector<Interval>& intervals, double t0, double t_end) {
  std::vector<std::pair<double, int>> edges;  // (time, +/-(category+1))
  for (const auto& iv : intervals) {
    const double b = std::clamp(iv.begin, t0, t_end), en = std::clamp(iv.end, t0, t_end);
    if (en <= b) continue;
    edges.emplace_back(b, static_cast<int>(iv.category) + 1);
    edges.emplace_back(en, -(static_cast<int>(iv.category) + 1));
  }
  std::sort(edges.begin(), edges.end());
  Split out;
  std::array<int, kCategoryCount> open{};
  double prev = t0;
  for (const auto& [time, code] : edges) {
    if (time > prev) {
      for (int c = 0; c < kCategoryCount; ++c)
        if (open[c] > 0) {
          out.seconds[c] += time - prev;
          out.covered += time - prev;
          break;
        }
      prev = time;
    }
    open[std::abs(code) - 1] += code > 0 ? 1 : -1;
  }
  return out;
}

// Reads the log event by event (one handler per event type that matters), collecting intervals, steps and
// counts; finish() turns them into the ledger.
class LedgerBuilder {
 public:
  explicit LedgerBuilder(double t0) : t0_(t0), t_end_(t0), attempt_begin_(t0), last_activity_(t0) {}

  void add(const nlohmann::json& e, std::size_t index) {
    const Reader r(e, index);
    const std::string type = e.value("type", "");
    const double t = r.number("t");
    t_end_ = std::max(t_end_, t);
    if (type == event::job_start) {
      t0_ = t;
      attempt_begin_ = last_activity_ = t;
      if (e.contains("reference_step_s") && e["reference_step_s"].is_number())
        reference_ = e["reference_step_s"].get<double>();
    } else if (type == event::attempt_start) {
      on_attempt_start(t);
    } else if (type == event::init_done) {
      on_init_done(t);
    } else if (type == event::preflight) {
      on_preflight(r, t);
    } else if (type == event::ckpt_interval) {
      L_.ckpt_interval_policy = r.text_or("policy", "");
      L_.ckpt_interval_s = r.number_or("interval_s", 0);
      L_.ckpt_interval_steps = static_cast<std::int64_t>(r.number_or("interval_steps", 0));
    } else if (type == event::ckpt_restore_start) {
      restore_start_at_ = t;
    } else if (type == event::ckpt_restore_end) {
      on_restore_end(e, r, t);
    } else if (type == event::step) {
      on_step(r, t);
    } else if (type == event::ckpt_save_end) {  // (ckpt_save_end carries its own start)
      on_save_end(r, t);
    } else if (type == event::ckpt_commit) {
      ++L_.ckpt_commits;
      // An asynchronous save's commit: how long after its snapshot it became durable.
      if (const auto it = async_save_end_.find(save_of(r)); it != async_save_end_.end()) {
        ++L_.ckpt_async_commits;
        L_.ckpt_async_commit_s += std::max(0.0, t - it->second);
        async_save_end_.erase(it);
      }
      L_.ckpt_write_bytes += static_cast<std::uint64_t>(r.number_or("bytes", 0));
      L_.ckpt_write_s += r.number_or("write_s", 0);
    } else if (type == event::fault_injected) {
      ++L_.faults_injected;
      if (const auto kind = r.text_or("kind", ""); is_fatal_fault_kind(kind)) {
        last_fault_at_ = t;
        last_fault_at_by_kind_[kind] = t;
      }
    } else if (type == event::failure_detected) {
      on_failure(r, t);
    } else if (type == event::relaunch) {
      relaunched_ = true;
      ++L_.restarts;
      if (!last_fatal_kind_.empty()) ++L_.restarts_by_kind[last_fatal_kind_];
    } else if (type == event::straggler_detected) {
      ++L_.stragglers;
    } else if (type == event::attempt_end && e.value("reason", "") == "drain") {
      // The job checkpointed and stopped for a drain (a straggling slot): the time to the next attempt is
      // its relaunch, as after a failure, and the restart counts under "drain".
      close_attempt(t);  // its uptime ends here: the gap to the next attempt is relaunch, not uptime
      pending_relaunch_ = t;
      relaunched_ = false;
      last_fatal_kind_ = "drain";
    } else if (type == event::drain) {
      ++L_.drains;
    } else if (type == event::job_end) {
      t_end_ = t;
    }
  }

  Ledger finish() {
    close_attempt(t_end_);
    // A relaunch under way when the job ended (the time budget in its delay) is relaunch time; after a
    // failure that nothing answered (the restart limit, a job given up) the rest is uncovered: other.
    if (!std::isnan(pending_relaunch_) && relaunched_)
      intervals_.push_back({pending_relaunch_, t_end_, kRelaunch});
    for (const auto& s : steps_) intervals_.push_back({s.begin, s.end, s.wasted ? kWasted : kProductive});
    L_.wall_s = std::max(0.0, t_end_ - t0_);
    const Split split = sweep(intervals_, t0_, t_end_);
    count_steps();
    fill_parts(split);
    fill_rates();
    L_.ckpt_save_failures = static_cast<int>(failed_saves_.size());
    return L_;
  }

 private:
  void rollback_to(std::int64_t step) {  // steps after `step` in the lineage are lost
    while (!kept_.empty() && steps_[kept_.back()].step > step) {
      steps_[kept_.back()].wasted = true;
      kept_.pop_back();
    }
  }
  void mark_resumed(double t) {
    if (awaiting_resume_ < 0) return;
    L_.failure_list[static_cast<std::size_t>(awaiting_resume_)].resumed_at = t;
    awaiting_resume_ = -1;
  }
  void close_attempt(double t) {
    if (attempt_open_ && !attempt_failed_) L_.uptime_s += std::max(0.0, t - attempt_begin_);
    attempt_open_ = false;
  }

  void on_attempt_start(double t) {
    close_attempt(t);
    if (!std::isnan(pending_relaunch_)) {
      intervals_.push_back({pending_relaunch_, t, kRelaunch});
      pending_relaunch_ = kNone;
    }
    ++L_.attempts;
    attempt_open_ = true;
    attempt_failed_ = false;
    relaunched_ = false;
    attempt_begin_ = last_activity_ = t;
    last_fault_at_ = kNone;
    last_fault_at_by_kind_.clear();
    restore_start_at_ = kNone;
  }

  void on_init_done(double t) {
    if (!attempt_open_) {  // a log without attempt_start events: the job start is the attempt start
      ++L_.attempts;
      attempt_open_ = true;
    }
    intervals_.push_back({attempt_begin_, t, kInit});
    if (L_.attempts > 1) restart_init_s_ += t - attempt_begin_;
    last_activity_ = t;
  }

  // Health checks before a launch: init time (of the attempt about to start; a re-attempt's is
  // failure-caused, as its init is).
  void on_preflight(const Reader& r, double t) {
    const double begin = std::min(t, r.number_or("t_start", t - r.number_or("seconds", 0)));
    intervals_.push_back({begin, t, kInit});
    ++L_.preflights;
    if (r.text_or("verdict", "") == "fail") ++L_.preflight_failures;
    L_.preflight_s += t - begin;
    if (L_.attempts > 0) restart_init_s_ += t - begin;
    last_activity_ = t;
  }

  void on_restore_end(const nlohmann::json& e, const Reader& r, double t) {
    const double begin = std::isnan(restore_start_at_) ? t - r.number_or("seconds", 0) : restore_start_at_;
    intervals_.push_back({begin, t, kRestore});
    const auto step = static_cast<std::int64_t>(r.number_or("step", 0));
    rollback_to(step);
    ++L_.ckpt_restores;
    L_.restored_steps.push_back(step);
    L_.ckpt_restore_s += t - begin;
    L_.ckpt_restore_bytes += static_cast<std::uint64_t>(r.number_or("bytes", 0));
    if (e.contains("skipped") && e["skipped"].is_array())
      for (const auto& s : e["skipped"])
        L_.ckpt_skipped.push_back({s.value("checkpoint", ""), s.value("reason", "")});
    mark_resumed(t);
    last_activity_ = t;
  }

  void on_step(const Reader& r, double t) {
    const auto step = static_cast<std::int64_t>(r.number("step"));
    const double begin = r.number("t_start");
    rollback_to(step - 1);  // a step run again means the earlier run of it (and later ones) was lost
    mark_resumed(begin);
    steps_.push_back({step, begin, t});
    kept_.push_back(steps_.size() - 1);
    last_activity_ = t;
  }

  // The save an event is of: (attempt, step); a step saved again in a later attempt is another save.
  std::pair<int, std::int64_t> save_of(const Reader& r) const {
    return {L_.attempts, static_cast<std::int64_t>(r.number_or("step", -1))};
  }

  void on_save_end(const Reader& r, double t) {
    const double begin = r.number_or("t_start", t - r.number_or("seconds", 0));
    intervals_.push_back({begin, t, kSave});
    L_.ckpt_save_blocking_s += t - begin;
    if (r.flag_or("ok", true)) {
      ++L_.ckpt_saves;
      if (r.flag_or("async", false)) async_save_end_[save_of(r)] = t;
    } else
      failed_saves_.insert(save_of(r));
    last_activity_ = t;
  }

  void on_failure(const Reader& r, double t) {
    const std::string kind = r.text_or("kind", "unknown");
    if (!r.flag_or("fatal", true)) {
      ++L_.nonfatal_by_kind[kind];
      // A save that never committed: a shard write that failed (in an async save's writer thread too, after
      // its ckpt_save_end said the hand-off was ok) or a refused commit. Each rank that failed logs it: one
      // save, counted once.
      if (kind == "ckpt-write-fail") failed_saves_.insert(save_of(r));
      return;
    }
    if (attempt_failed_) return;  // the same failure seen again (e.g. the supervisor after the watchdog)
    attempt_failed_ = true;
    last_fatal_kind_ = kind;
    pending_relaunch_ = t;
    relaunched_ = false;
    if (kind == kLaunchFailure) {
      // No rank started: the attempt's time is failed start-up (init, failure-caused), and neither a
      // failure of the running job (MTTF) nor a repair (MTTR).
      ++L_.launch_failures;
      L_.launch_failure_list.push_back({L_.attempts, kind, -1, r.text_or("how", ""), attempt_begin_, t, {}});
      intervals_.push_back({attempt_begin_, t, kInit});
      restart_init_s_ += t - attempt_begin_;
      attempt_open_ = false;
      last_activity_ = t;
      return;
    }
    // The failure instant: the injected fault of the failure's kind (a crash, not an SDC injected beside it
    // on another rank), else the latest fatal fault, else the last logged activity.
    const auto same_kind = last_fault_at_by_kind_.find(kind);
    const double injected_at = same_kind != last_fault_at_by_kind_.end() ? same_kind->second : last_fault_at_;
    double failed_at = r.number_or("failed_at", std::isnan(injected_at) ? last_activity_ : injected_at);
    failed_at = std::min(failed_at, t);
    ++L_.failures;
    ++L_.failures_by_kind[kind];
    L_.detection_latency_s_by_kind[kind].push_back(t - failed_at);
    if (last_activity_ < failed_at) intervals_.push_back({last_activity_, failed_at, kPartial});
    intervals_.push_back({std::max(failed_at, last_activity_), t, kDetection});
    if (attempt_open_) L_.uptime_s += std::max(0.0, failed_at - attempt_begin_);
    attempt_open_ = false;
    L_.failure_list.push_back({L_.attempts, kind, static_cast<int>(r.number_or("rank", -1)),
                               r.text_or("how", ""), failed_at, t, std::nullopt});
    awaiting_resume_ = static_cast<long>(L_.failure_list.size()) - 1;
    last_activity_ = t;
  }

  // Steps: the productive lineage and the wasted re-done work; the reference step.
  void count_steps() {
    std::vector<double> kept_durations;
    for (const auto idx : kept_) kept_durations.push_back(steps_[idx].end - steps_[idx].begin);
    L_.kept_steps = static_cast<std::int64_t>(kept_.size());
    L_.steps_completed = kept_.empty() ? 0 : steps_[kept_.back()].step;
    for (const auto& s : steps_) L_.wasted_steps += s.wasted ? 1 : 0;
    L_.reference_step_s = reference_.value_or(summarize(kept_durations).median);
  }

  void fill_parts(const Split& split) {
    const auto& seconds = split.seconds;
    auto& P = L_.parts;
    L_.productive_time_s = seconds[kProductive];
    const double at_reference = static_cast<double>(L_.kept_steps) * L_.reference_step_s;
    P.slowdown_s = std::max(0.0, seconds[kProductive] - at_reference);
    P.productive_s = seconds[kProductive] - P.slowdown_s;
    P.init_s = seconds[kInit];
    P.ckpt_save_s = seconds[kSave];
    P.ckpt_restore_s = seconds[kRestore];
    P.wasted_s = seconds[kWasted] + seconds[kPartial];
    P.detection_s = seconds[kDetection];
    P.relaunch_s = seconds[kRelaunch];
    P.other_s = std::max(0.0, L_.wall_s - split.covered);
  }

  // Goodput, ETTR, MTTF, MTTR and bandwidths from the parts and the failure list.
  void fill_rates() {
    const auto& P = L_.parts;
    if (L_.wall_s > 0) {
      L_.goodput = L_.productive_time_s / L_.wall_s;
      L_.goodput_ref = P.productive_s / L_.wall_s;
      const double loss = P.ckpt_restore_s + P.wasted_s + P.detection_s + P.relaunch_s + restart_init_s_;
      // A job that never kept a step trained for none of its time.
      L_.ettr = L_.kept_steps > 0 ? std::clamp(1.0 - loss / L_.wall_s, 0.0, 1.0) : 0.0;
    }
    L_.mttf_censored = L_.failures == 0;
    L_.mttf_s = L_.failures > 0 ? L_.uptime_s / L_.failures : L_.uptime_s;
    double repair = 0;
    int repaired = 0;
    for (const auto& f : L_.failure_list)
      if (f.resumed_at) {
        repair += *f.resumed_at - f.failed_at;
        ++repaired;
      }
    L_.mttr_s = repaired > 0 ? repair / repaired : 0;
    if (L_.ckpt_write_s > 0)
      L_.ckpt_write_gbps = static_cast<double>(L_.ckpt_write_bytes) / L_.ckpt_write_s / 1e9;
    if (L_.ckpt_restore_s > 0)
      L_.ckpt_restore_gbps = static_cast<double>(L_.ckpt_restore_bytes) / L_.ckpt_restore_s / 1e9;
  }

  Ledger L_;
  std::vector<Interval> intervals_;
  std::vector<StepRecord> steps_;  // every step event, in order
  std::vector<std::size_t> kept_;  // indices into steps_ of the current lineage
  double t0_, t_end_;
  std::optional<double> reference_;
  double restart_init_s_ = 0;
  // Per attempt.
  double attempt_begin_, last_activity_;
  bool attempt_open_ = false, attempt_failed_ = false;
  double pending_relaunch_ = kNone;  // detection time of the last fatal failure awaiting a relaunch
  std::set<std::pair<int, std::int64_t>> failed_saves_;  // (attempt, step) of saves that did not commit
  std::map<std::pair<int, std::int64_t>, double> async_save_end_;  // (attempt, step) → end of its snapshot
  double last_fault_at_ = kNone;                         // latest fatal fault injected in this attempt
  std::map<std::string, double> last_fault_at_by_kind_;  // ... of each kind
  bool relaunched_ = false;  // a relaunch event followed the last fatal failure (or drain stop)
  double restore_start_at_ = kNone;
  long awaiting_resume_ = -1;    // failure_list index whose resume time is not yet known
  std::string last_fatal_kind_;  // of the failure the next relaunch answers
};

}  // namespace

Ledger compute_ledger(std::span<const nlohmann::json> events) {
  if (events.empty()) return {};
  LedgerBuilder builder(events.front().value("t", 0.0));
  for (std::size_t i = 0; i < events.size(); ++i) builder.add(events[i], i);
  return builder.finish();
}

namespace {

std::vector<reports::LedgerFailure> failure_records(const std::vector<FailureRecord>& list) {
  std::vector<reports::LedgerFailure> out;
  for (const auto& f : list)
    out.push_back({f.attempt, f.kind, f.rank, f.how, f.failed_at, f.detected_at, f.resumed_at});
  return out;
}

}  // namespace

reports::LedgerRecord ledger_record(const Ledger& L) {
  reports::LedgerRecord x;
  x.wall_s = L.wall_s;
  for (const auto& [name, s] : L.parts.items()) x.split_s[name] = s;
  x.productive_time_s = L.productive_time_s;
  x.reference_step_s = L.reference_step_s;
  x.goodput = L.goodput;
  x.goodput_ref = L.goodput_ref;
  x.ettr = L.ettr;
  x.uptime_s = L.uptime_s;
  x.mttf_s = L.mttf_s;
  x.mttf_censored = L.mttf_censored;
  x.mttr_s = L.mttr_s;
  x.attempts = L.attempts;
  x.failures = L.failures;
  x.restarts = L.restarts;
  x.failures_by_kind = L.failures_by_kind;
  x.restarts_by_kind = L.restarts_by_kind;
  x.nonfatal_by_kind = L.nonfatal_by_kind;
  for (const auto& [kind, v] : L.detection_latency_s_by_kind) {
    const auto st = summarize(v);
    x.detection_latency_by_kind[kind] = {st.mean, st.max, st.n};
  }
  x.failure_list = failure_records(L.failure_list);
  x.launch_failures = L.launch_failures;
  x.launch_failure_list = failure_records(L.launch_failure_list);
  x.steps_completed = L.steps_completed;
  x.kept_steps = L.kept_steps;
  x.wasted_steps = L.wasted_steps;
  x.stragglers = L.stragglers;
  x.drains = L.drains;
  x.faults_injected = L.faults_injected;
  x.preflight = {L.preflights, L.preflight_failures, L.preflight_s};
  auto& c = x.checkpoints;
  c.saves = L.ckpt_saves;
  c.save_failures = L.ckpt_save_failures;
  c.commits = L.ckpt_commits;
  c.restores = L.ckpt_restores;
  c.save_blocking_s = L.ckpt_save_blocking_s;
  c.write_s = L.ckpt_write_s;
  c.async_commits = L.ckpt_async_commits;
  c.async_commit_s = L.ckpt_async_commit_s;
  c.write_bytes = L.ckpt_write_bytes;
  c.write_gbps = L.ckpt_write_gbps;
  c.restore_s = L.ckpt_restore_s;
  c.restore_bytes = L.ckpt_restore_bytes;
  c.restore_gbps = L.ckpt_restore_gbps;
  c.restored_steps = L.restored_steps;
  c.interval_policy = L.ckpt_interval_policy;
  c.interval_s = L.ckpt_interval_s;
  c.interval_steps = L.ckpt_interval_steps;
  for (const auto& k : L.ckpt_skipped) c.skipped.push_back({k.checkpoint, k.reason});
  x.torn_lines = L.torn_lines;
  return x;
}

nlohmann::json ledger_to_json(const Ledger& L) {
  return reports::ledger_json(ledger_record(L));
}

}  // namespace fb::resilience
