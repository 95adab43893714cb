// factorybench simulate: cluster-scale goodput from a failure model and recovery costs (Monte Carlo over
// trials). Needs no device and no MPI: the report is begun without them, so the command starts at once.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress_meter.hpp"
#include "core/units.hpp"
#include "reports/report_json.hpp"
#include "reports/simulate_console.hpp"
#include "resilience/cluster_simulator.hpp"
#include "resilience/failure_model.hpp"
#include "resilience/simulation_result.hpp"
#include "tools/comma_list.hpp"
#include "tools/commands.hpp"
#include "tools/count_option.hpp"

namespace fb::tools {
namespace {

using resilience::ClusterConfig;
using resilience::FailureModel;
using resilience::IntervalPolicy;

struct SimulateOptions {
  std::optional<std::int64_t> gpus;
  int gpus_per_node = 0;            // 0: the failure model's node size
  std::optional<double> days;       // window; default 30 (exclusive with work_days)
  std::optional<double> work_days;  // a fixed amount of work: the job ends when it is done
  std::string failure_model;
  std::string job_mtbf;
  std::optional<std::string> interval;  // unset: daly (an explicit daly is told from it)
  std::string checkpoint_cost, checkpoint_commit, detection, relaunch, restore;
  std::string calibrate;
  std::optional<std::int64_t> spares;
  std::optional<std::string> repair_time;  // default 48h; acts only with --spares
  std::string policy = "none";
  std::optional<int> drain_after;  // default 2; acts only with --policy drain
  // A share acts only with its factor and a factor only with its share: unset, each is a no-op.
  std::optional<double> flaky_share, flaky_factor, straggler_share, straggler_factor;
  int trials = 200;
  std::string sweep_gpus, sweep_interval;
};

double positive_duration(const std::string& text, const std::string& option, bool mtbf = false) {
  const double s = mtbf ? parse_mtbf_duration(text, option) : parse_duration(text, option);
  if (!(s > 0)) throw usage_error(fmt::format("invalid {} '{}': must be a positive duration", option, text));
  return s;
}

std::vector<std::int64_t> parse_gpu_list(const std::string& text) {
  std::vector<std::int64_t> out;
  for (const auto& item : split_comma_list(text, "--sweep-gpus")) {
    // Whole numbers, as --gpus takes them ("8K" or "1e3" there are refused, so here too).
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw usage_error(fmt::format("invalid --sweep-gpus '{}': expected a whole number", item));
    if (n == 0)
      throw usage_error(fmt::format("invalid --sweep-gpus '{}': GPU counts must be positive", item));
    if (n > static_cast<std::uint64_t>(resilience::kMaxGpus))
      throw usage_error(
          fmt::format("invalid --sweep-gpus '{}': at most {} GPUs", item, resilience::kMaxGpus));
    // Results are named by GPU count (and interval): a repeat would be a second result of the same name.
    if (std::find(out.begin(), out.end(), static_cast<std::int64_t>(n)) != out.end())
      throw usage_error(fmt::format("invalid --sweep-gpus '{}': {} is listed twice", text, item));
    out.push_back(static_cast<std::int64_t>(n));
  }
  if (out.empty())
    throw usage_error(fmt::format("invalid --sweep-gpus '{}': expected a list such as 1024,8192", text));
  return out;
}

// One recovery cost: the option when given, else the calibration, else the default.
resilience::RecoveryCosts resolve_costs(const SimulateOptions& opt, resilience::CostSources& src,
                                        nlohmann::json& notes) {
  resilience::RecoveryCosts costs;
  if (!opt.calibrate.empty()) {
    reports::Report report;
    try {
      report = reports::read_report(opt.calibrate);
    } catch (const Error& e) {
      throw Error(e.kind(), fmt::format("--calibrate: {}", e.what()));
    }
    const auto cal = resilience::calibrate_from_report(report, opt.calibrate);
    const auto take = [&](const std::optional<double>& v, double& into, std::string& s, const char* metric) {
      if (!v) return;
      // A cost measured by a real run: positive, and far below a month (1e12 s made every trial badput).
      if (!(*v > 0) || *v > 30 * 86400.0)
        throw input_error(
            fmt::format("--calibrate {}: {} = {:g} s is not a plausible recovery cost (expected "
                        "(0 s, 30 d])",
                        opt.calibrate, metric, *v));
      into = *v;
      s = fmt::format("calibrate ({})", metric);
    };
    take(cal.checkpoint_s, costs.checkpoint_s, src.checkpoint, "blocking save time / saves");
    if (cal.commit_s) {  // 0 is a synchronous save
      if (*cal.commit_s > 30 * 86400.0)
        throw input_error(
            fmt::format("--calibrate {}: async_commit_s / async_commits = {:g} s is not a "
                        "plausible write time (expected [0 s, 30 d])",
                        opt.calibrate, *cal.commit_s));
      costs.commit_s = *cal.commit_s;
      src.commit = cal.commit_sync ? "calibrate (synchronous saves)"
                                   : "calibrate (async snapshot end to commit / async commits)";
    }
    const std::string per_restore = "badput_s.ckpt_restore / " + cal.restarts_from;
    const std::string per_relaunch =
        "badput_s.relaunch / " + cal.restarts_from + (cal.relaunch_has_init ? " + init / attempts" : "");
    take(cal.restore_s, costs.restore_s, src.restore, per_restore.c_str());
    take(cal.detection_s, costs.detection_s, src.detection, "badput_s.detection / failures");
    take(cal.relaunch_s, costs.relaunch_s, src.relaunch, per_relaunch.c_str());
    notes["calibration"] = {{"source", cal.source}, {"missing", cal.missing}, {"unmeasured", cal.unmeasured}};
    if (!cal.detection_from.empty()) {
      auto& from = notes["calibration"]["detection_from"];  // failures by kind: counts
      for (const auto& [kind, n] : cal.detection_from) from[kind] = static_cast<long long>(std::llround(n));
    }
    if (cal.detection_in_step_only && opt.detection.empty()) {
      std::string kinds;
      for (const auto& [kind, n] : cal.detection_from)
        kinds += fmt::format("{}{} {:g}", kinds.empty() ? "" : ", ", kind, n);
      log::warn(
          "--calibrate {}: its detection ({}) comes from failures the step itself finds ({}); a crash is "
          "found when the launcher sees a rank die and a hang at a watchdog's timeout, as most of the "
          "failure "
          "model's interruptions would be: give --detection, or calibrate from a run with crash or hang "
          "faults",
          opt.calibrate, format_duration(*cal.detection_s), kinds);
      notes["calibration"]["detection_note"] =
          "from failures the step itself detects (sdc, nan) only: not a crash's or a hang's detection";
    }
    if (!cal.missing.empty()) {
      std::string list;
      for (const auto& m : cal.missing) list += (list.empty() ? "" : ", ") + m;
      log::warn("--calibrate {}: missing {}; using options or defaults for those", opt.calibrate, list);
    }
    if (!cal.unmeasured.empty()) {
      std::string list;
      for (const auto& [cost, why] : cal.unmeasured)
        list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", cost, why);
      log::warn("--calibrate {}: that run did not measure {}; using options or defaults for those",
                opt.calibrate, list);
    }
  }
  const auto option = [&](const std::string& text, const char* name, double& into, std::string& s) {
    if (text.empty()) return;
    into = positive_duration(text, name);
    s = "option";
  };
  option(opt.checkpoint_cost, "--checkpoint-cost", costs.checkpoint_s, src.checkpoint);
  option(opt.detection, "--detection", costs.detection_s, src.detection);
  option(opt.relaunch, "--relaunch", costs.relaunch_s, src.relaunch);
  option(opt.restore, "--restore", costs.restore_s, src.restore);
  if (!opt.checkpoint_commit.empty()) {  // 0 is a synchronous save
    costs.commit_s = parse_duration(opt.checkpoint_commit, "--checkpoint-commit");
    src.commit = "option";
  }
  return costs;
}

// Progress on stderr for long runs (core/progress_meter): the share of the estimated simulator events done
// and the trials done in the current case; one callback per simulate() call whose trials each cost
// `trial_events`.
class SimulateProgress {
 public:
  explicit SimulateProgress(double total_events) : meter_("simulate", total_events) {}
  resilience::TrialProgress for_call(std::string label, int trials, double trial_events) {
    const double base = done_;
    return [this, label = std::move(label), trials, trial_events, base](double k) {
      done_ = base + k * trial_events;
      if (meter_.due())
        meter_.update(done_, k == std::floor(k) ? fmt::format("{}: {}/{} trials", label, k, trials)
                                                : fmt::format("{}: {:.2f}/{} trials", label, k, trials));
    };
  }

 private:
  ProgressMeter meter_;
  double done_ = 0;
};

int run_simulate(const SimulateOptions& opt, Session& session) {
  // Everything is validated before any simulation runs, so bad input writes no report, and a report that
  // cannot be written is said before hours of simulation rather than after.
  if (session.is_root()) session.check_output_writable();
  if (!opt.failure_model.empty() && !opt.job_mtbf.empty())
    throw usage_error("--failure-model and --job-mtbf are exclusive: give one");
  FailureModel model =
      !opt.job_mtbf.empty()
          ? resilience::single_rate_model(positive_duration(opt.job_mtbf, "--job-mtbf", true))
          : resilience::load_failure_model(opt.failure_model.empty() ? "llama3-h100" : opt.failure_model);
  if (opt.trials < 1 || opt.trials > resilience::kMaxTrials)
    throw usage_error(
        fmt::format("invalid --trials {}: must be in [1, {}]", opt.trials, resilience::kMaxTrials));
  if (opt.days && opt.work_days)
    throw usage_error(
        "--days and --work-days are exclusive: a window of wall time or a fixed amount of work");
  constexpr double max_days = resilience::kMaxDays;
  if (opt.days && (!(*opt.days > 0) || !std::isfinite(*opt.days) || *opt.days > max_days))
    throw usage_error(fmt::format("invalid --days {}: must be a positive number of days (at most {})",
                                  *opt.days, max_days));
  if (opt.work_days && (!(*opt.work_days > 0) || !std::isfinite(*opt.work_days) || *opt.work_days > max_days))
    throw usage_error(fmt::format("invalid --work-days {}: must be a positive number of days (at most {})",
                                  *opt.work_days, max_days));

  nlohmann::json notes = nlohmann::json::object();
  resilience::CostSources src;
  ClusterConfig base;
  base.gpus_per_node = opt.gpus_per_node > 0 ? opt.gpus_per_node : model.gpus_per_node;
  if (opt.gpus_per_node < 0)
    throw usage_error(fmt::format("invalid --gpus-per-node {}: must be positive", opt.gpus_per_node));
  if (opt.work_days) {
    base.work_s = *opt.work_days * 86400.0;
    // A trial that has not finished by then (goodput under 1%) is cut off and counted as unfinished.
    base.wall_s = 100 * base.work_s;
  } else {
    base.wall_s = opt.days.value_or(30) * 86400.0;
  }
  base.costs = resolve_costs(opt, src, notes);
  // An option that could not act is refused rather than ignored: the report would look like its answer.
  if (opt.repair_time && !opt.spares)
    throw usage_error("--repair-time acts only with --spares N (without it a replacement is always at hand)");
  if (opt.drain_after && opt.policy != "drain")
    throw usage_error("--drain-after acts only with --policy drain");
  if (opt.flaky_factor.has_value() != opt.flaky_share.has_value())
    throw usage_error(opt.flaky_factor
                          ? "--flaky-factor needs --flaky-share (the share of nodes it applies to)"
                          : "--flaky-share needs --flaky-factor (how much more often they fail)");
  if (opt.straggler_factor.has_value() != opt.straggler_share.has_value())
    throw usage_error(opt.straggler_factor
                          ? "--straggler-factor needs --straggler-share (the share of nodes it applies to)"
                          : "--straggler-share needs --straggler-factor (how much slower they are)");
  base.spares = opt.spares;
  base.repair_s = positive_duration(opt.repair_time.value_or("48h"), "--repair-time");
  base.drain = opt.policy == "drain" ? resilience::DrainPolicy::drain : resilience::DrainPolicy::none;
  base.drain_after = opt.drain_after.value_or(2);
  base.flaky_share = opt.flaky_share.value_or(0);
  base.flaky_factor = opt.flaky_factor.value_or(1);
  base.straggler_share = opt.straggler_share.value_or(0);
  base.straggler_factor = opt.straggler_factor.value_or(1);

  std::vector<std::int64_t> gpu_counts;
  // One of each pair: the other would be silently ignored.
  if (!opt.sweep_gpus.empty() && opt.gpus)
    throw usage_error("--gpus and --sweep-gpus are exclusive: give one");
  if (!opt.sweep_interval.empty() && opt.interval)
    throw usage_error("--checkpoint-interval and --sweep-interval are exclusive: give one");
  if (!opt.sweep_gpus.empty())
    gpu_counts = parse_gpu_list(opt.sweep_gpus);
  else if (opt.gpus)
    gpu_counts = {*opt.gpus};
  else
    throw usage_error("simulate needs --gpus N or --sweep-gpus LIST");

  const std::string interval = opt.interval.value_or("daly");
  // (policy, fixed interval, the text the user gave for it)
  std::vector<std::tuple<IntervalPolicy, std::optional<double>, std::string>> intervals;
  if (!opt.sweep_interval.empty()) {
    for (const auto& item : split_comma_list(opt.sweep_interval, "--sweep-interval")) {
      const double d = positive_duration(item, "--sweep-interval");
      // Results are named for the interval in whole seconds (fixed-600s): two that round alike would be
      // two results of one name, which compare refuses.
      for (const auto& seen : intervals)
        if (std::lround(*std::get<1>(seen)) == std::lround(d))
          throw usage_error(
              fmt::format("invalid --sweep-interval '{}': {} and {} are the same interval to the second",
                          opt.sweep_interval, std::get<2>(seen), item));
      intervals.emplace_back(IntervalPolicy::fixed, d, item);
    }
    if (intervals.empty()) throw usage_error("invalid --sweep-interval: expected a list such as 10m,30m,1h");
  } else if (interval == "auto" || interval == "young" || interval == "daly") {
    intervals.emplace_back(resilience::parse_interval_policy(interval), std::nullopt, interval);
  } else {
    // Not a policy: a duration, positive and sane (that error names the bound), or neither (that error lists
    // every choice).
    const bool duration = !interval.empty() && (std::isdigit(static_cast<unsigned char>(interval[0])) ||
                                                interval[0] == '.' || interval[0] == '-');
    if (!duration) resilience::parse_interval_policy(interval);  // throws
    intervals.emplace_back(IntervalPolicy::fixed, positive_duration(interval, "--checkpoint-interval"),
                           interval);
  }
  std::vector<resilience::SimulationCase> cases;
  double total_events = 0;
  for (auto g : gpu_counts)
    for (const auto& [policy, fixed, text] : intervals) {
      resilience::SimulationCase c{g, policy, fixed};
      ClusterConfig cfg = base;
      cfg.gpus = g;
      if (opt.gpus_per_node == 0 && g > 0 && g <= resilience::kMaxGpus && g % cfg.gpus_per_node != 0)
        throw usage_error(fmt::format(
            "invalid {} {}: not a multiple of {}'s node size, {} GPUs (set --gpus-per-node)",
            opt.sweep_gpus.empty() ? "--gpus" : "--sweep-gpus", g, model.name, cfg.gpus_per_node));
      resilience::validate(cfg);
      if (fixed && *fixed < cfg.costs.checkpoint_s)
        throw usage_error(
            fmt::format("invalid {} '{}': shorter than the checkpoint cost {}",
                        opt.sweep_interval.empty() ? "--checkpoint-interval" : "--sweep-interval", text,
                        format_duration(cfg.costs.checkpoint_s)));
      cases.push_back(c);
      total_events += (opt.trials + resilience::interval_search_trials(policy, opt.trials)) *
                      resilience::estimated_trial_events(model, cfg);
    }
  // Estimated up front: a run of hours is refused with the figures rather than left running silently.
  if (total_events > resilience::kMaxEvents)
    throw usage_error(fmt::format(
        "simulate would run about {:.2g} failure and node events ({} trials of {} case(s)), over the limit "
        "of {:.2g}: lower --trials, --days, --work-days or --gpus (or give more --spares)",
        total_events, opt.trials, cases.size(), resilience::kMaxEvents));

  if (session.checking_only()) return 0;  // a suite's preflight: validated, nothing run
  SimulateProgress meter(total_events);
  const resilience::CaseProgress progress = [&meter](std::string label, int trials, double trial_events) {
    return meter.for_call(std::move(label), trials, trial_events);
  };
  auto report = session.begin_report(false);
  for (const auto& c : cases)
    report.results.push_back(
        resilience::simulation_result(model, base, c, opt.trials, session.options().seed, src, progress));
  report.summary =
      resilience::simulation_summary(model, report.results, notes.value("calibration", nlohmann::json()));
  const int rc = session.finish(report);
  // Every rank of an MPI job (a suite's) simulates the same seeded trials; rank 0 speaks.
  if (session.is_root() && !session.options().quiet)
    reports::print_simulation(std::cout, report, resilience::kTimeSplitNames);
  return rc;
}

}  // namespace

Command add_simulate_command(CLI::App& app) {
  auto opt = std::make_shared<SimulateOptions>();
  auto* sub = app.add_subcommand(
      "simulate",
      "Cluster-scale goodput: Monte Carlo of failures, checkpoints and restarts (no device needed)");
  sub->add_option("--gpus", opt->gpus, "GPUs in the job");
  add_count_option(*sub, "--gpus-per-node", opt->gpus_per_node,
                   "GPUs per node (default: the failure model's)");
  sub->add_option("--days", opt->days, "Wall-time window of the job in days (default 30)");
  sub->add_option(
      "--work-days", opt->work_days,
      "Instead of a window: a fixed amount of work, in days of failure-free compute; reports the time "
      "to train (time_to_train_h)");
  sub->add_option(
      "--failure-model", opt->failure_model,
      "Preset in configs/failure-models (llama3-h100, meta-rsc1-a100) or a JSON file (default llama3-h100)");
  sub->add_option("--job-mtbf", opt->job_mtbf,
                  "Single-rate model: the job's mean time between failures (e.g. 6h)");
  sub->add_option(
      "--checkpoint-interval", opt->interval,
      "auto (best simulated goodput), young, daly (default) or a fixed duration of compute between saves");
  sub->add_option("--checkpoint-cost", opt->checkpoint_cost, "Blocking checkpoint save time C (default 60s)");
  sub->add_option(
      "--checkpoint-commit", opt->checkpoint_commit,
      "Asynchronous saves: time from the end of the blocking save until the checkpoint is durable "
      "(the background write, W); a failure before it loses the saved interval too, and a write "
      "longer than the interval blocks the next save (default 0: synchronous saves)");
  sub->add_option("--detection", opt->detection, "Failure detection latency (default 120s)");
  sub->add_option("--relaunch", opt->relaunch, "Relaunch time after detection (default 300s)");
  sub->add_option("--restore", opt->restore, "Checkpoint restore time (default 120s)");
  sub->add_option(
      "--calibrate", opt->calibrate,
      "Take checkpoint, restore, detection and relaunch costs from a `factorybench resilience` report");
  sub->add_option("--spares", opt->spares,
                  "Hot spare nodes (default: unlimited, a replacement is always at hand)");
  sub->add_option("--repair-time", opt->repair_time,
                  "Time until a failed node returns to the spare pool (default 48h; with --spares)");
  sub->add_option("--policy", opt->policy,
                  "none or drain (retire nodes that fail --drain-after times, and stragglers)")
      ->check(CLI::IsMember({"none", "drain"}));
  sub->add_option("--drain-after", opt->drain_after,
                  "Failures before a node is drained (default 2; with --policy drain)");
  sub->add_option("--flaky-share", opt->flaky_share,
                  "Share of nodes that fail more often (0..0.5; with --flaky-factor)");
  sub->add_option("--flaky-factor", opt->flaky_factor,
                  "How much more often flaky nodes fail (with --flaky-share)");
  sub->add_option("--straggler-share", opt->straggler_share,
                  "Share of nodes that are slow (with --straggler-factor)");
  sub->add_option("--straggler-factor", opt->straggler_factor,
                  "Slowdown of a straggler node (with --straggler-share)");
  sub->add_option("--trials", opt->trials, "Monte Carlo trials (default 200)");
  sub->add_option("--sweep-gpus", opt->sweep_gpus, "Comma-separated GPU counts, one result each");
  sub->add_option("--sweep-interval", opt->sweep_interval,
                  "Comma-separated fixed intervals, one result each");
  return {sub, [opt](Session& s) { return run_simulate(*opt, s); }, true};
}

}  // namespace fb::tools
