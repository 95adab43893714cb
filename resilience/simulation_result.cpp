#include "resilience/simulation_result.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/simulate_extra.hpp"
#include "resilience/checkpoint_interval.hpp"

namespace fb::resilience {
namespace {

// Checkpoint cycles (T + C) a wall-time window needs before its goodput is a long run's, to about a tenth.
constexpr int kSteadyStateCycles = 10;

reports::Metric distribution(const StreamingSummary& s, std::string unit, reports::Better better) {
  return {s.mean(), std::move(unit), better, s.stats()};
}

reports::SimulatePercentiles percentiles(const StreamingSummary& s, double scale = 1) {
  return {s.percentile(5) / scale, s.percentile(50) / scale, s.percentile(95) / scale, s.mean() / scale};
}

}  // namespace

reports::Result simulation_result(const FailureModel& model, const ClusterConfig& base,
                                  const SimulationCase& c, int trials, std::uint64_t seed,
                                  const CostSources& src, const CaseProgress& progress) {
  ClusterConfig cfg = base;
  cfg.gpus = c.gpus;
  validate(cfg);
  const double trial_events = estimated_trial_events(model, cfg);
  const std::string label = fmt::format("{} GPUs", c.gpus);
  const auto progress_for = [&](std::string call, int n, double events) {
    return progress ? progress(std::move(call), n, events) : TrialProgress{};
  };
  const int search_trials = interval_search_trials(c.policy, trials);
  const auto choice = choose_interval(c.policy, c.fixed_s, model, cfg, trials, seed,
                                      progress_for(label + ", interval search", search_trials, trial_events));
  const auto sim =
      simulate(model, cfg, choice.interval_s, trials, seed, progress_for(label, trials, trial_events));
  const auto& k = cfg.costs;
  const double mtbf = sim.model_mtbf_s;

  reports::Result r;
  r.benchmark = "simulate";
  const std::string policy_name = c.policy == IntervalPolicy::fixed
                                      ? fmt::format("fixed-{}s", std::lround(choice.interval_s))
                                      : std::string(to_string(c.policy));
  r.name = fmt::format("{}/{}gpus/{}", model.name, c.gpus, policy_name);
  r.params = {{"failure_model", model.name},
              {"failure_model_file", model.file},
              {"gpus", c.gpus},
              {"gpus_per_node", cfg.gpus_per_node},
              {"nodes", cfg.nodes()},
              {"days", cfg.work_s > 0 ? sim.mean_wall_s / 86400.0 : cfg.wall_s / 86400.0},
              {"work_days", cfg.work_s > 0 ? nlohmann::json(cfg.work_s / 86400.0) : nlohmann::json(nullptr)},
              {"trials", trials},
              {"seed", seed},
              {"interval_policy", to_string(c.policy)},
              {"interval_s", choice.interval_s},
              {"young_interval_s", choice.young_s},
              {"daly_interval_s", choice.daly_s},
              {"analytic_goodput_at_daly_pct",
               100 * first_order_goodput(choice.daly_s, k.checkpoint_s, k.restart_s(), mtbf, k.commit_s)},
              {"checkpoint_s", k.checkpoint_s},
              {"commit_s", k.commit_s},
              {"detection_s", k.detection_s},
              {"relaunch_s", k.relaunch_s},
              {"restore_s", k.restore_s},
              {"restart_s", k.restart_s()},
              {"cost_sources",
               {{"checkpoint", src.checkpoint},
                {"commit", src.commit},
                {"detection", src.detection},
                {"relaunch", src.relaunch},
                {"restore", src.restore}}},
              {"spares", cfg.spares ? nlohmann::json(*cfg.spares) : nlohmann::json("unlimited")},
              {"repair_s", cfg.repair_s},
              {"policy", cfg.drain == DrainPolicy::drain ? "drain" : "none"},
              {"drain_after", cfg.drain_after},
              {"flaky_share", cfg.flaky_share},
              {"flaky_factor", cfg.flaky_factor},
              {"straggler_share", cfg.straggler_share},
              {"straggler_factor", cfg.straggler_factor},
              {"job_mtbf_model_h", mtbf / 3600.0},
              {"expected_failures", sim.expected_failures}};

  using reports::Better;
  r.set_metric("goodput_pct", distribution(sim.goodput_pct, "%", Better::higher));
  r.set_metric("ettr", distribution(sim.ettr, "fraction", Better::higher));
  r.set_metric("failures_mean", distribution(sim.failures, "count", Better::lower));
  // No failure in any trial: the MTBF is beyond the simulated time, not a number to gate on (JSON would
  // write infinity as null, which compare reads as a failed measurement).
  if (std::isfinite(sim.sim_mtbf_s))
    r.set_metric("job_mtbf_h", {sim.sim_mtbf_s / 3600.0, "h", Better::higher, std::nullopt});
  else
    r.params["job_mtbf_note"] = "no failure in any trial: the job MTBF is beyond the simulated time";
  r.set_metric("interval_s", {choice.interval_s, "s", Better::none, std::nullopt});
  // Both closed forms take the asynchronous write W too (resilience/checkpoint_interval.hpp).
  const double analytic =
      first_order_goodput(choice.interval_s, k.checkpoint_s, k.restart_s(), mtbf, k.commit_s);
  r.set_metric("analytic_goodput_pct", {100 * analytic, "%", Better::higher, std::nullopt});
  // Daly's complete model (with the write, its extension): the simulation's own assumptions (failures in
  // saves and restarts) at one constant rate, valid where the first-order formula is not; drains, spares,
  // flaky nodes and stragglers are the simulation's alone.
  const double exponential =
      exponential_goodput(choice.interval_s, k.checkpoint_s, k.restart_s(), mtbf, k.commit_s);
  r.set_metric("exponential_goodput_pct", {100 * exponential, "%", Better::higher, std::nullopt});
  // The first-order formula assumes at most one failure per interval and a restart short beside the MTBF;
  // where its overheads add up to all the time it reads 0, which says only that it no longer applies.
  if (const double overhead =
          first_order_overhead(choice.interval_s, k.checkpoint_s, k.restart_s(), mtbf, k.commit_s);
      overhead >= 1)
    r.params["analytic_note"] = fmt::format(
        "the first-order formula does not apply here: {} = {:.2f} >= 1 (the restart alone is {:.2f} of the "
        "MTBF{}); the exponential model gives {:.2f}%, and the simulated goodput is the figure",
        k.commit_s > 0 ? "C/max(T, W) + (T/2 + the write's loss)/M + R/M" : "C/T + T/2M + R/M", overhead,
        k.restart_s() / mtbf,
        k.commit_s > 0 ? fmt::format(", the write {}", format_duration(k.commit_s)) : std::string(),
        100 * exponential);
  // A window of few checkpoint cycles is mostly its ends: the work after its last save counts as kept
  // (resilience/trial_engine.cpp) and no save at the end is paid, so its goodput overstates a long run's (a
  // trial with no failure in a window shorter than one cycle reads 100%). A cycle is max(T, W) + C: a write
  // that outlasts the interval holds the next save back.
  const double cycle_s = std::max(choice.interval_s, k.commit_s) + k.checkpoint_s;
  if (cfg.work_s <= 0 && cfg.wall_s < kSteadyStateCycles * cycle_s)
    r.params["window_note"] = fmt::format(
        "the {} window holds {:.2f} checkpoint cycles ({} = {}), under {}: the work after its last save "
        "counts as kept and no final save is paid, so its goodput overstates a long run's (the exp-model's "
        "{:.2f}% has no such ends)",
        format_duration(cfg.wall_s), std::floor(cfg.wall_s / cycle_s * 100) / 100,
        k.commit_s > 0 ? "max(T, W) + C" : "T + C", format_duration(cycle_s), kSteadyStateCycles,
        100 * exponential);
  if (cfg.work_s > 0) {
    // Time to train a fixed amount of work: per trial, from start until the work is kept. A trial cut off at
    // the cap has none: a mean with it would be a floor that reads as a figure (the same floor for every
    // worse setting), so the value is then null, which compare counts WORSE, as a measurement with no number.
    r.set_metric("time_to_train_h",
                 {sim.unfinished == 0 ? sim.wall_s.mean() / 3600.0 : NAN, "h", Better::lower, std::nullopt});
    if (sim.unfinished > 0)
      r.params["time_to_train_note"] = fmt::format(
          "{} of {} trials had not kept the work when cut off at {} (100 x the work): the time to train is "
          "beyond that, so time_to_train_h has no value",
          sim.unfinished, trials, format_duration(cfg.wall_s));
    r.params["analytic_time_to_train_h"] =
        analytic > 0 ? nlohmann::json(cfg.work_s / analytic / 3600.0) : nlohmann::json(nullptr);
    r.params["exponential_time_to_train_h"] =
        exponential > 0 ? nlohmann::json(cfg.work_s / exponential / 3600.0) : nlohmann::json(nullptr);
    r.params["unfinished_trials"] = sim.unfinished;
  }

  reports::SimulateExtra x;
  x.goodput_pct = percentiles(sim.goodput_pct);
  x.ettr = percentiles(sim.ettr);
  x.failures_mean = percentiles(sim.failures);
  x.wall_h = percentiles(sim.wall_s, 3600);
  x.productive_s = sim.mean_split.productive;
  const auto parts = as_array(sim.mean_split);
  for (std::size_t i = 1; i < parts.size(); ++i) {  // [0] is productive
    x.badput_s[std::string(kTimeSplitNames[i])] = parts[i];
    x.badput_pct[std::string(kTimeSplitNames[i])] = sim.mean_split_pct[i];
  }
  for (std::size_t i = 0; i < model.categories.size(); ++i)
    x.failures_by_category[model.categories[i].name] = sim.mean_failures_by_category[i];
  x.drained_nodes_mean = sim.mean_drained_nodes;
  x.interval_search = choice.searched;
  reports::write_simulate_extra(r, x);
  return r;
}

nlohmann::json simulation_summary(const FailureModel& model, const std::vector<reports::Result>& results,
                                  const nlohmann::json& calibration) {
  if (results.empty()) return nlohmann::json::object();
  const auto& first = results.front();
  const auto extra = reports::read_simulate_extra(first);
  nlohmann::json summary = {{"failure_model", model.name},
                            {"failure_model_source", model.source},
                            {"goodput_pct", first.metric("goodput_pct")->value},
                            {"analytic_goodput_pct", first.metric("analytic_goodput_pct")->value},
                            {"exponential_goodput_pct", first.metric("exponential_goodput_pct")->value},
                            {"badput_s", extra.badput_s},
                            {"badput_pct", extra.badput_pct},
                            {"percentiles_in", "results[].extra.percentiles (p5, p50, p95 per metric)"}};
  if (!calibration.is_null()) summary["calibration"] = calibration;
  return summary;
}

}  // namespace fb::resilience
