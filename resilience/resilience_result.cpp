#include "resilience/resilience_result.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace fb::resilience {

reports::Result resilience_result(const SupervisorResult& s, std::string_view policy,
                                  const ResilienceRunParams& p) {
  using reports::Better;
  const auto& L = s.ledger;
  reports::Result r;
  r.benchmark = "resilience";
  r.name = fmt::format("{}/ranks{}/policy-{}", p.model, p.ranks, policy);
  r.params = {{"ranks", p.ranks},
              {"launcher", enum_name(kLauncherNames, p.launcher)},
              {"policy", policy},
              {"faults", p.faults},
              {"steps", p.steps},
              {"checkpoint_every", p.checkpoint_every},
              {"checkpoint_interval", p.checkpoint_interval},
              {"max_restarts", p.max_restarts},
              {"spares", p.spares},
              {"drain_after", p.drain_after},
              {"async_checkpoint", p.async_checkpoint},
              {"state_bytes", p.state_bytes},
              {"mtbf", p.mtbf},
              {"time_budget", p.time_budget},
              {"preflight", p.preflight},
              {"run_dir", p.run_dir},
              {"train_options", p.train_options}};
  if (!p.steps_given && !p.time_budget.empty()) r.params["steps"] = nullptr;  // until the budget is spent
  const auto m = [&](const char* name, double v, const char* unit, Better b) {
    r.set_metric(name, {v, unit, b, std::nullopt});
  };
  m("goodput_pct", 100 * L.goodput, "%", Better::higher);
  m("goodput_ref_pct", 100 * L.goodput_ref, "%", Better::higher);
  m("ettr", L.ettr, "fraction", Better::higher);
  // With no failure the MTTF is the uptime, a lower bound that a faster job shortens: reported, not judged.
  m("mttf_s", L.mttf_s, "s", L.mttf_censored ? Better::none : Better::higher);
  // MTTR averages the failures that were recovered; with none (no failure, or a job that never came back)
  // there is no repair time, and 0 would read as the best one.
  if (std::any_of(L.failure_list.begin(), L.failure_list.end(), [](const auto& f) { return f.resumed_at; }))
    m("mttr_s", L.mttr_s, "s", Better::lower);
  m("failures", L.failures, "count", Better::lower);
  m("restarts", L.restarts, "count", Better::lower);
  m("wasted_steps", static_cast<double>(L.wasted_steps), "count", Better::lower);
  m("steps_completed", static_cast<double>(L.steps_completed), "count", Better::higher);
  m("wall_s", L.wall_s, "s", Better::lower);
  // The partition of wall_s (productive_s + extra.ledger.badput_s = wall_s) is the reference-step one; the
  // step-time definition's productive seconds (slow steps included) are productive_time_s. Neither has a
  // better direction: a job of fixed --steps with faster steps has fewer productive seconds, a job given a
  // --time-budget more; goodput_pct is their judged share.
  m("productive_s", L.parts.productive_s, "s", Better::none);
  m("productive_time_s", L.productive_time_s, "s", Better::none);
  if (L.launch_failures > 0) m("launch_failures", L.launch_failures, "count", Better::lower);
  m("ckpt_save_s", L.parts.ckpt_save_s, "s", Better::lower);
  m("ckpt_restore_s", L.parts.ckpt_restore_s, "s", Better::lower);
  m("ckpt_write_gbps", L.ckpt_write_gbps, "GB/s", Better::higher);
  m("ckpt_save_blocking_s", L.ckpt_save_blocking_s, "s", Better::lower);
  if (L.ckpt_interval_s > 0) m("ckpt_interval_s", L.ckpt_interval_s, "s", Better::none);
  if (L.preflights > 0) m("preflight_s", L.preflight_s, "s", Better::lower);
  reports::ResilienceExtra extra{ledger_record(L), s.stop_reason, std::nullopt};
  if (!s.drains.empty()) {
    auto& d = extra.drain.emplace();
    for (const auto& e : s.drains) d.drains.push_back(reports::drain_from_event(e));
    d.mttf_before_drain_s = s.mttf_before_drain_s;
    d.mttf_after_drain_s = s.mttf_after_drain_s;
    d.failures_before_drain = s.failures_before_drain;
    d.failures_after_drain = s.failures_after_drain;
  }
  reports::write_resilience_extra(r, extra);
  // A job stopped by --time-budget alone (no --steps) did what it was asked.
  const bool budget_only = !p.steps_given && !p.time_budget.empty() && s.stop == StopReason::time_budget;
  if (!s.completed && !budget_only)
    r.fail(fmt::format("the job did not finish its {} steps: {}", p.steps, s.stop_reason));
  return r;
}

nlohmann::json resilience_summary(const std::vector<SupervisorResult>& runs) {
  nlohmann::json summary = nlohmann::json::object();
  if (runs.empty()) return summary;
  const auto& L = runs.back().ledger;
  nlohmann::json badput = nlohmann::json::object();
  for (const auto& [name, v] : L.parts.items())
    if (name != "productive") badput[name] = v;
  summary["productive_s"] = L.parts.productive_s;  // + Σ badput_s = wall_s
  summary["badput_s"] = badput;
  summary["wall_s"] = L.wall_s;
  if (runs.size() == 2) {
    const auto &a = runs[0].ledger, &b = runs[1].ledger;
    summary["compare"] = {{"mttf_ratio", a.mttf_s > 0 ? b.mttf_s / a.mttf_s : 0.0},
                          {"goodput_pct_difference", 100 * (b.goodput - a.goodput)},
                          {"mttf_none_s", a.mttf_s},
                          {"mttf_drain_s", b.mttf_s}};
  }
  return summary;
}

}  // namespace fb::resilience
