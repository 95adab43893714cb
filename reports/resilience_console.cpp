#include "reports/resilience_console.hpp"

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace fb::reports {

void print_resilience_result(std::ostream& out, const Result& r,
                             std::span<const std::string_view> time_parts) {
  const auto& L = r.extra["ledger"];
  const auto i64 = [](const nlohmann::json& j) { return j.get<std::int64_t>(); };
  const auto num = [](const nlohmann::json& j) { return j.get<double>(); };
  const auto str = [](const nlohmann::json& j) { return j.get<std::string>(); };
  const std::string stop_reason = str(r.extra["stop_reason"]);
  const double wall_s = num(L["wall_s"]);
  out << fmt::format("{}: {} steps in {:.2f} s; {} failure(s), {} restart(s), {} wasted step(s){}\n", r.name,
                     i64(L["steps_completed"]), wall_s, i64(L["failures"]), i64(L["restarts"]),
                     i64(L["wasted_steps"]),
                     stop_reason == "completed" ? "" : fmt::format(" ({})", stop_reason));
  out << fmt::format(
      "goodput {:.1f}% (step-time), {:.1f}% (reference-step), ETTR {:.3f}, MTTF {:.2f} s{}, MTTR {:.2f} s\n",
      100 * num(L["goodput"]), 100 * num(L["goodput_ref"]), num(L["ettr"]), num(L["mttf_s"]),
      L["mttf_censored"].get<bool>() ? " (no failure)" : "", num(L["mttr_s"]));
  out << "where the wall time went:\n";
  const auto& split = L["split_s"];
  for (const auto name : time_parts) {
    const auto it = split.find(std::string(name));
    if (it == split.end()) continue;
    const double secs = num(*it);
    out << fmt::format("  {:<14} {:>9.3f} s {:>6.1f}%\n", name, secs, wall_s > 0 ? 100 * secs / wall_s : 0.0);
  }
  for (const auto& f : L["failure_list"])
    out << fmt::format("  failure: {} on rank {} (attempt {}), detected after {:.2f} s: {}\n", str(f["kind"]),
                       i64(f["rank"]), i64(f["attempt"]), num(f["detected_at"]) - num(f["failed_at"]),
                       str(f["how"]));
  for (const auto& f : L["launch_failure_list"])
    out << fmt::format("  launch failed (attempt {}), no rank started: {}\n", i64(f["attempt"]),
                       str(f["how"]));
  const auto& ck = L["checkpoints"];
  for (const auto& k : ck["skipped"])
    out << fmt::format("  skipped {}: {}\n", str(k["checkpoint"]), str(k["reason"]));
  out << fmt::format("checkpoints: {} saved, {} committed, blocking {:.3f} s in all, write {:.3f} GB/s\n",
                     i64(ck["saves"]), i64(ck["commits"]), num(ck["save_blocking_s"]), num(ck["write_gbps"]));
  if (const auto policy = str(ck["interval_policy"]); !policy.empty())
    out << fmt::format("checkpoint interval ({}): {:.3f} s = every {} step(s)\n", policy,
                       num(ck["interval_s"]), i64(ck["interval_steps"]));
  const auto& pre = L["preflight"];
  if (i64(pre["checks"]) > 0)
    out << fmt::format("pre-flight: {} health check(s), {} failed, {:.2f} s\n", i64(pre["checks"]),
                       i64(pre["failed"]), num(pre["seconds"]));
  // drains and the MTTF split are in extra only when the run drained a rank.
  if (r.extra.contains("drains")) {
    for (const auto& d : r.extra["drains"])
      out << fmt::format("  drained rank {}: slot {} -> {} ({})\n", i64(d["rank"]), i64(d["from_slot"]),
                         i64(d["to_slot"]), str(d["reason"]));
    const double before_s = num(r.extra["mttf_before_drain_s"]), after_s = num(r.extra["mttf_after_drain_s"]);
    const auto before = i64(r.extra["failures_before_drain"]), after = i64(r.extra["failures_after_drain"]);
    if (before + after > 0 || before_s > 0)
      out << fmt::format("MTTF before draining {:.2f} s ({} failure(s)), after {:.2f} s ({} failure(s))\n",
                         before_s, before, after_s, after);
  }
  if (r.error) out << "FAILED: " << *r.error << "\n";
}

void print_resilience(std::ostream& out, const Report& report, std::span<const std::string_view> time_parts) {
  for (const auto& r : report.results) print_resilience_result(out, r, time_parts);
  if (report.summary.contains("compare")) {
    const auto& c = report.summary["compare"];
    out << fmt::format("drain vs none: MTTF x{:.2f}, goodput {:+.1f} points\n", c["mttf_ratio"].get<double>(),
                       c["goodput_pct_difference"].get<double>());
  }
}

}  // namespace fb::reports
