#include "reports/resilience_extra.hpp"

#include <algorithm>

#include "reports/extra_cursor.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

json failures_json(const std::vector<LedgerFailure>& list) {
  json out = json::array();
  for (const auto& f : list) {
    json j = {{"attempt", f.attempt}, {"kind", f.kind},           {"rank", f.rank},
              {"how", f.how},         {"failed_at", f.failed_at}, {"detected_at", f.detected_at}};
    j["resumed_at"] = f.resumed_at ? json(*f.resumed_at) : json(nullptr);
    out.push_back(j);
  }
  return out;
}

json checkpoints_json(const LedgerCheckpoints& c) {
  json skipped = json::array();
  for (const auto& s : c.skipped) skipped.push_back({{"checkpoint", s.checkpoint}, {"reason", s.reason}});
  return {{"saves", c.saves},
          {"save_failures", c.save_failures},
          {"commits", c.commits},
          {"restores", c.restores},
          {"save_blocking_s", c.save_blocking_s},
          {"write_s", c.write_s},
          {"async_commits", c.async_commits},
          {"async_commit_s", c.async_commit_s},
          {"write_bytes", c.write_bytes},
          {"write_gbps", c.write_gbps},
          {"restore_s", c.restore_s},
          {"restore_bytes", c.restore_bytes},
          {"restore_gbps", c.restore_gbps},
          {"restored_steps", c.restored_steps},
          {"interval_policy", c.interval_policy},
          {"interval_s", c.interval_s},
          {"interval_steps", c.interval_steps},
          {"skipped", skipped}};
}

LedgerFailure read_failure(const ExtraCursor& f) {
  LedgerFailure x;
  x.attempt = f.at("attempt").integer<int>();
  x.kind = f.at("kind").str();
  x.rank = f.at("rank").integer<int>();
  x.how = f.at("how").str();
  x.failed_at = f.at("failed_at").num();
  x.detected_at = f.at("detected_at").num();
  if (f.has("resumed_at")) x.resumed_at = f.at("resumed_at").num();
  return x;
}

template <class T>
std::map<std::string, T> read_counts(const ExtraCursor& c) {
  std::map<std::string, T> out;
  for (const auto& [key, value] : c.object().items())
    out[key] = c.child(value, c.path + "." + key).template integer<T>();
  return out;
}

LedgerCheckpoints read_checkpoints(const ExtraCursor& c) {
  LedgerCheckpoints x;
  x.saves = c.at("saves").integer<int>();
  x.save_failures = c.at("save_failures").integer<int>();
  x.commits = c.at("commits").integer<int>();
  x.restores = c.at("restores").integer<int>();
  x.save_blocking_s = c.at("save_blocking_s").num();
  x.write_s = c.at("write_s").num();
  if (c.has("async_commits")) x.async_commits = c.at("async_commits").integer<int>();  // since 2026-12-06
  if (c.has("async_commit_s")) x.async_commit_s = c.at("async_commit_s").num();
  x.write_bytes = c.at("write_bytes").integer<std::uint64_t>();
  x.write_gbps = c.at("write_gbps").num();
  x.restore_s = c.at("restore_s").num();
  x.restore_bytes = c.at("restore_bytes").integer<std::uint64_t>();
  x.restore_gbps = c.at("restore_gbps").num();
  x.restored_steps =
      c.at("restored_steps").each([](const ExtraCursor& s) { return s.integer<std::int64_t>(); });
  x.interval_policy = c.at("interval_policy").str();
  x.interval_s = c.at("interval_s").num();
  x.interval_steps = c.at("interval_steps").integer<std::int64_t>();
  x.skipped = c.at("skipped").each([](const ExtraCursor& s) {
    return LedgerCheckpointSkip{s.at("checkpoint").str(), s.at("reason").str()};
  });
  return x;
}

LedgerRecord read_ledger(const ExtraCursor& c) {
  LedgerRecord L;
  L.wall_s = c.at("wall_s").num();
  L.split_s = c.at("split_s").figures();
  L.productive_time_s = c.at("productive_time_s").num();
  L.reference_step_s = c.at("reference_step_s").num();
  L.goodput = c.at("goodput").num();
  L.goodput_ref = c.at("goodput_ref").num();
  L.ettr = c.at("ettr").num();
  L.uptime_s = c.at("uptime_s").num();
  L.mttf_s = c.at("mttf_s").num();
  L.mttf_censored = c.at("mttf_censored").boolean();
  L.mttr_s = c.has("mttr_s") ? c.at("mttr_s").num() : 0;  // null: no failure was recovered
  L.attempts = c.at("attempts").integer<int>();
  L.failures = c.at("failures").integer<int>();
  L.restarts = c.at("restarts").integer<int>();
  L.failures_by_kind = read_counts<int>(c.at("failures_by_kind"));
  L.restarts_by_kind = read_counts<int>(c.at("restarts_by_kind"));
  L.nonfatal_by_kind = read_counts<int>(c.at("nonfatal_by_kind"));
  const auto latency = c.at("detection_latency_by_kind");
  for (const auto& [kind, value] : latency.object().items()) {
    const auto k = latency.child(value, latency.path + "." + kind);
    L.detection_latency_by_kind[kind] = {k.at("mean_s").num(), k.at("max_s").num(),
                                         k.at("n").integer<std::size_t>()};
  }
  L.failure_list = c.at("failure_list").each(read_failure);
  L.launch_failures = c.at("launch_failures").integer<int>();
  L.launch_failure_list = c.at("launch_failure_list").each(read_failure);
  L.steps_completed = c.at("steps_completed").integer<std::int64_t>();
  L.kept_steps = c.at("kept_steps").integer<std::int64_t>();
  L.wasted_steps = c.at("wasted_steps").integer<std::int64_t>();
  L.stragglers = c.at("stragglers").integer<int>();
  L.drains = c.at("drains").integer<int>();
  L.faults_injected = c.at("faults_injected").integer<int>();
  const auto pre = c.at("preflight");
  L.preflight = {pre.at("checks").integer<int>(), pre.at("failed").integer<int>(), pre.at("seconds").num()};
  L.checkpoints = read_checkpoints(c.at("checkpoints"));
  L.torn_lines = c.at("torn_lines").integer<std::size_t>();
  return L;
}

ResilienceDrain read_drain(const ExtraCursor& c) {
  ResilienceDrain d;
  d.rank = c.at("rank").integer<int>();
  d.from_slot = c.at("from_slot").integer<int>();
  d.to_slot = c.at("to_slot").integer<int>();
  d.reason = c.at("reason").str();
  d.event = c.j;
  for (const char* key : {"rank", "from_slot", "to_slot", "reason"}) d.event.erase(key);
  return d;
}

}  // namespace

json ledger_json(const LedgerRecord& L) {
  json badput = json::object();
  for (const auto& [name, s] : L.split_s)
    if (name != "productive") badput[name] = s;
  const auto productive = L.split_s.find("productive");
  const double productive_s = productive == L.split_s.end() ? 0.0 : productive->second;
  // Both goodput definitions, each with the productive seconds it divides by the wall time.
  const json definitions = {
      {"step_time",
       {{"goodput", L.goodput},
        {"productive_s", L.productive_time_s},
        {"counts", "kept step time, slow steps included: split_s productive + slowdown"}}},
      {"reference_step",
       {{"goodput", L.goodput_ref},
        {"productive_s", productive_s},
        {"counts", "kept steps at the reference step time: split_s productive; slowdown is badput"}}}};
  json latency = json::object();
  for (const auto& [kind, d] : L.detection_latency_by_kind)
    latency[kind] = {{"mean_s", d.mean_s}, {"max_s", d.max_s}, {"n", d.n}};
  const json preflight = {
      {"checks", L.preflight.checks}, {"failed", L.preflight.failed}, {"seconds", L.preflight.seconds}};
  return {{"wall_s", L.wall_s},
          {"split_s", L.split_s},
          {"badput_s", badput},
          {"productive_time_s", L.productive_time_s},
          {"reference_step_s", L.reference_step_s},
          {"goodput", L.goodput},
          {"goodput_ref", L.goodput_ref},
          {"goodput_definitions", definitions},
          {"ettr", L.ettr},
          {"uptime_s", L.uptime_s},
          {"mttf_s", L.mttf_s},
          {"mttf_censored", L.mttf_censored},
          // No failure recovered, no repair time: null, not 0 s (which reads as the best one).
          {"mttr_s", std::any_of(L.failure_list.begin(), L.failure_list.end(),
                                 [](const auto& f) { return f.resumed_at.has_value(); })
                         ? json(L.mttr_s)
                         : json(nullptr)},
          {"attempts", L.attempts},
          {"failures", L.failures},
          {"restarts", L.restarts},
          {"failures_by_kind", L.failures_by_kind},
          {"restarts_by_kind", L.restarts_by_kind},
          {"nonfatal_by_kind", L.nonfatal_by_kind},
          {"detection_latency_by_kind", latency},
          {"failure_list", failures_json(L.failure_list)},
          {"launch_failures", L.launch_failures},
          {"launch_failure_list", failures_json(L.launch_failure_list)},
          {"steps_completed", L.steps_completed},
          {"kept_steps", L.kept_steps},
          {"wasted_steps", L.wasted_steps},
          {"stragglers", L.stragglers},
          {"drains", L.drains},
          {"faults_injected", L.faults_injected},
          {"preflight", preflight},
          {"checkpoints", checkpoints_json(L.checkpoints)},
          {"torn_lines", L.torn_lines}};
}

ResilienceDrain drain_from_event(const json& event) {
  const std::string source = "drain event";
  return read_drain(ExtraCursor{{event, "$", source}});
}

void write_resilience_extra(Result& r, const ResilienceExtra& x) {
  r.extra["ledger"] = ledger_json(x.ledger);
  r.extra["stop_reason"] = x.stop_reason;
  if (!x.drain) return;
  const auto& d = *x.drain;
  json drains = json::array();
  for (const auto& e : d.drains) {
    json j = e.event;
    j["rank"] = e.rank;
    j["from_slot"] = e.from_slot;
    j["to_slot"] = e.to_slot;
    j["reason"] = e.reason;
    drains.push_back(std::move(j));
  }
  r.extra["drains"] = drains;
  r.extra["mttf_before_drain_s"] = d.mttf_before_drain_s;
  r.extra["mttf_after_drain_s"] = d.mttf_after_drain_s;
  // The failure counts behind each MTTF, so the console can print them from the report alone.
  r.extra["failures_before_drain"] = d.failures_before_drain;
  r.extra["failures_after_drain"] = d.failures_after_drain;
}

ResilienceExtra read_resilience_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    ResilienceExtra x;
    x.ledger = read_ledger(e.at("ledger"));
    x.stop_reason = e.at("stop_reason").str();
    if (e.has("drains")) {
      DrainSplit d;
      d.drains = e.at("drains").each(read_drain);
      d.mttf_before_drain_s = e.at("mttf_before_drain_s").num();
      d.mttf_after_drain_s = e.at("mttf_after_drain_s").num();
      d.failures_before_drain = e.at("failures_before_drain").integer<int>();
      d.failures_after_drain = e.at("failures_after_drain").integer<int>();
      x.drain = std::move(d);
    }
    return x;
  });
}

std::optional<LedgerRecoveryTotals> find_ledger_recovery_totals(const Result& r) {
  if (!r.extra.is_object() || !r.extra.contains("ledger")) return std::nullopt;
  return read_extra(r, [](const ExtraCursor& extra) {
    // A field may be absent (an older or hand-written report); one that is there must be what the ledger
    // writes, or the calibration would quietly fall back to defaults for a garbled value.
    const auto ledger = extra.at("ledger");
    ledger.object();
    const auto number = [](const ExtraCursor& c, const char* key) -> std::optional<double> {
      if (!c.has(key)) return std::nullopt;
      return c.at(key).num();
    };
    LedgerRecoveryTotals t;
    t.attempts = number(ledger, "attempts");
    t.failures = number(ledger, "failures");
    t.restarts = number(ledger, "restarts");
    if (ledger.has("checkpoints")) {
      const auto checkpoints = ledger.at("checkpoints");
      checkpoints.object();
      t.checkpoint_saves = number(checkpoints, "saves");
      t.checkpoint_save_blocking_s = number(checkpoints, "save_blocking_s");
      t.checkpoint_async_commits = number(checkpoints, "async_commits");
      t.checkpoint_async_commit_s = number(checkpoints, "async_commit_s");
    }
    if (ledger.has("badput_s")) t.badput_s = ledger.at("badput_s").figures();
    if (ledger.has("failures_by_kind")) t.failures_by_kind = ledger.at("failures_by_kind").figures();
    return t;
  });
}

}  // namespace fb::reports
