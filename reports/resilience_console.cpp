#include "reports/resilience_console.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "reports/resilience_extra.hpp"

namespace fb::reports {

void print_resilience_result(std::ostream& out, const Result& r,
                             std::span<const std::string_view> time_parts) {
  const auto extra = read_resilience_extra(r);
  const auto& L = extra.ledger;
  const auto& stop_reason = extra.stop_reason;
  out << fmt::format("{}: {} steps in {:.2f} s; {} failure(s), {} restart(s), {} wasted step(s){}\n", r.name,
                     L.steps_completed, L.wall_s, L.failures, L.restarts, L.wasted_steps,
                     stop_reason == "completed" ? "" : fmt::format(" ({})", stop_reason));
  const bool repaired =
      std::any_of(L.failure_list.begin(), L.failure_list.end(), [](const auto& f) { return f.resumed_at; });
  out << fmt::format(
      "goodput {:.1f}% (step-time), {:.1f}% (reference-step), ETTR {:.3f}, MTTF {:.2f} s{}, MTTR {}\n",
      100 * L.goodput, 100 * L.goodput_ref, L.ettr, L.mttf_s, L.mttf_censored ? " (no failure)" : "",
      repaired ? fmt::format("{:.2f} s", L.mttr_s) : std::string("n/a (no failure recovered)"));
  out << "where the wall time went:\n";
  for (const auto name : time_parts) {
    const auto it = L.split_s.find(std::string(name));
    if (it == L.split_s.end()) continue;
    const double secs = it->second;
    out << fmt::format("  {:<14} {:>9.3f} s {:>6.1f}%\n", name, secs,
                       L.wall_s > 0 ? 100 * secs / L.wall_s : 0.0);
  }
  for (const auto& f : L.failure_list)
    out << fmt::format("  failure: {} on {} (attempt {}), detected after {:.2f} s: {}\n", f.kind,
                       f.rank >= 0 ? fmt::format("rank {}", f.rank) : std::string("an unknown rank"),
                       f.attempt, f.detected_at - f.failed_at, f.how);
  for (const auto& f : L.launch_failure_list)
    out << fmt::format("  launch failed (attempt {}), no rank started: {}\n", f.attempt, f.how);
  const auto& ck = L.checkpoints;
  for (const auto& k : ck.skipped) out << fmt::format("  skipped {}: {}\n", k.checkpoint, k.reason);
  out << fmt::format("checkpoints: {} saved, {} committed{}, blocking {:.3f} s in all, write {:.3f} GB/s\n",
                     ck.saves, ck.commits,
                     ck.save_failures > 0 ? fmt::format(", {} failed (not committed)", ck.save_failures) : "",
                     ck.save_blocking_s, ck.write_gbps);
  if (!ck.interval_policy.empty())
    out << fmt::format("checkpoint interval ({}): {:.3f} s = every {} step(s)\n", ck.interval_policy,
                       ck.interval_s, ck.interval_steps);
  const auto& pre = L.preflight;
  if (pre.checks > 0)
    out << fmt::format("pre-flight: {} health check(s), {} failed, {:.2f} s\n", pre.checks, pre.failed,
                       pre.seconds);
  // drains and the MTTF split are in extra only when the run drained a rank.
  if (const auto& d = extra.drain) {
    for (const auto& e : d->drains)
      out << fmt::format("  drained rank {}: slot {} -> {} ({})\n", e.rank, e.from_slot, e.to_slot, e.reason);
    const double before_s = d->mttf_before_drain_s, after_s = d->mttf_after_drain_s;
    const auto before = d->failures_before_drain, after = d->failures_after_drain;
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
