#include "resilience/cluster_simulator.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "core/units.hpp"
#include "reports/resilience_extra.hpp"
#include "resilience/checkpoint_interval.hpp"

namespace fb::resilience {

std::string_view to_string(IntervalPolicy p) {
  switch (p) {
    case IntervalPolicy::fixed:
      return "fixed";
    case IntervalPolicy::young:
      return "young";
    case IntervalPolicy::daly:
      return "daly";
    case IntervalPolicy::search:
      return "auto";
  }
  return "?";
}

IntervalPolicy parse_interval_policy(std::string_view text) {
  if (text == "young") return IntervalPolicy::young;
  if (text == "daly") return IntervalPolicy::daly;
  if (text == "auto") return IntervalPolicy::search;
  throw usage_error(
      fmt::format("invalid --checkpoint-interval '{}': expected auto, young, daly or a duration", text));
}

std::array<double, 8> as_array(const TimeSplit& s) {
  return {s.productive, s.checkpoint, s.redone,     s.detection,
          s.relaunch,   s.restore,    s.spare_wait, s.straggler};
}

void validate(const ClusterConfig& c) {
  if (c.gpus <= 0) throw usage_error(fmt::format("invalid --gpus {}: must be positive", c.gpus));
  if (c.gpus_per_node <= 0)
    throw usage_error(fmt::format("invalid --gpus-per-node {}: must be positive", c.gpus_per_node));
  if (c.gpus > kMaxGpus)
    throw usage_error(fmt::format("invalid --gpus {}: at most {} GPUs", c.gpus, kMaxGpus));
  if (c.gpus % c.gpus_per_node != 0)
    throw usage_error(
        fmt::format("invalid --gpus {}: not a multiple of --gpus-per-node {}", c.gpus, c.gpus_per_node));
  const auto positive = [](double v, const char* option) {
    if (!std::isfinite(v) || v <= 0)
      throw usage_error(fmt::format("invalid {} {}: must be a positive duration", option, v));
  };
  positive(c.wall_s, "--days");
  if (c.work_s == 0 && c.wall_s > kMaxDays * 86400)
    throw usage_error(fmt::format("invalid --days {}: at most {} days", c.wall_s / 86400, kMaxDays));
  if (!std::isfinite(c.work_s) || c.work_s < 0)
    throw usage_error(
        fmt::format("invalid --work-days {}: must be a positive number of days", c.work_s / 86400));
  positive(c.costs.checkpoint_s, "--checkpoint-cost");
  if (!std::isfinite(c.costs.commit_s) || c.costs.commit_s < 0)
    throw usage_error(
        fmt::format("invalid --checkpoint-commit {}: must be a duration of at least 0", c.costs.commit_s));
  positive(c.costs.detection_s, "--detection");
  positive(c.costs.relaunch_s, "--relaunch");
  positive(c.costs.restore_s, "--restore");
  positive(c.repair_s, "--repair-time");
  if (c.spares) {
    if (*c.spares < 0) throw usage_error(fmt::format("invalid --spares {}: must be zero or more", *c.spares));
    if (*c.spares > c.nodes())
      throw usage_error(
          fmt::format("invalid --spares {}: more spares than the job's {} nodes", *c.spares, c.nodes()));
  }
  if (c.drain_after < 1)
    throw usage_error(fmt::format("invalid --drain-after {}: must be at least 1", c.drain_after));
  if (!(c.flaky_share >= 0 && c.flaky_share <= 0.5))
    throw usage_error(fmt::format("invalid --flaky-share {}: must be in [0, 0.5]", c.flaky_share));
  if (!(c.flaky_factor >= 1 && std::isfinite(c.flaky_factor)))
    throw usage_error(fmt::format("invalid --flaky-factor {}: must be at least 1", c.flaky_factor));
  if (!(c.straggler_share >= 0 && c.straggler_share <= 1))
    throw usage_error(fmt::format("invalid --straggler-share {}: must be in [0, 1]", c.straggler_share));
  if (!(c.straggler_factor >= 1 && std::isfinite(c.straggler_factor)))
    throw usage_error(fmt::format("invalid --straggler-factor {}: must be at least 1", c.straggler_factor));
}

// ---------------------------------------------------------------------------------------------------------
// Streaming summary

void StreamingSummary::P2::init(const std::array<double, 5>& sorted, double prob) {
  p = prob;
  q = sorted;
  n = {0, 1, 2, 3, 4};
  np = {0, 2 * p, 4 * p, 2 + 2 * p, 4};
  dn = {0, p / 2, p, (1 + p) / 2, 1};
}

void StreamingSummary::P2::add(double x) {
  int k;
  if (x < q[0]) {
    q[0] = x;
    k = 0;
  } else if (x >= q[4]) {
    q[4] = std::max(q[4], x);
    k = 3;
  } else {
    k = 0;
    while (k < 3 && x >= q[k + 1]) ++k;
  }
  for (int i = k + 1; i < 5; ++i) n[i] += 1;
  for (int i = 0; i < 5; ++i) np[i] += dn[i];
  for (int i = 1; i <= 3; ++i) {
    const double d = np[i] - n[i];
    if ((d >= 1 && n[i + 1] - n[i] > 1) || (d <= -1 && n[i - 1] - n[i] < -1)) {
      const double s = d > 0 ? 1.0 : -1.0;
      // Piecewise-parabolic prediction; fall back to linear when it leaves the neighbours' range.
      const double qp = q[i] + s / (n[i + 1] - n[i - 1]) *
                                   ((n[i] - n[i - 1] + s) * (q[i + 1] - q[i]) / (n[i + 1] - n[i]) +
                                    (n[i + 1] - n[i] - s) * (q[i] - q[i - 1]) / (n[i] - n[i - 1]));
      if (q[i - 1] < qp && qp < q[i + 1]) {
        q[i] = qp;
      } else {
        const int j = i + static_cast<int>(s);
        q[i] += s * (q[j] - q[i]) / (n[j] - n[i]);
      }
      n[i] += s;
    }
  }
}

StreamingSummary::StreamingSummary() {
  exact_.reserve(64);
}

void StreamingSummary::add(double x) {
  ++n_;
  if (n_ == 1) min_ = max_ = x;
  min_ = std::min(min_, x);
  max_ = std::max(max_, x);
  const double delta = x - mean_;  // Welford
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (x - mean_);
  if (n_ <= kExactSampleCap) exact_.push_back(x);
  // Past the cap, a count per value for as long as there are at most kExactSampleCap of them.
  if (std::isnan(x)) histogram_exact_ = false;  // a NaN has no place in an ordered map
  if (histogram_exact_ && n_ > kExactSampleCap) {
    if (n_ == kExactSampleCap + 1)  // the samples so far, from now on as counts
      for (const double v : exact_) ++histogram_[v];
    ++histogram_[x];
    if (histogram_.size() > kExactSampleCap) {
      histogram_exact_ = false;
      histogram_.clear();
    }
  }
  if (n_ == 5) {
    std::array<double, 5> first;
    std::copy(exact_.begin(), exact_.begin() + 5, first.begin());
    std::sort(first.begin(), first.end());
    const std::array<double, 4> probs{0.05, 0.5, 0.95, 0.99};
    for (std::size_t i = 0; i < p2_.size(); ++i) p2_[i].init(first, probs[i]);
  } else if (n_ > 5) {
    for (auto& e : p2_) e.add(x);
  }
  if (n_ == kExactSampleCap + 1) {
    exact_.clear();
    exact_.shrink_to_fit();
  }
}

double StreamingSummary::percentile(double p) const {
  if (n_ == 0) return 0;
  if (n_ <= kExactSampleCap) {
    // p50 is the median as every other figure of the report states it (the mean of the middle two for an
    // even count), so extra.percentiles and the metric's stats agree; other ranks are nearest-rank.
    if (p == 50) return summarize(exact_).median;
    std::vector<double> sorted = exact_;
    std::sort(sorted.begin(), sorted.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n_)));
    return sorted[std::clamp<std::size_t>(rank, 1, n_) - 1];
  }
  if (histogram_exact_) {  // the same ranks, from the counts of each value
    if (p == 50)
      return n_ % 2 ? value_at_rank(n_ / 2 + 1) : (value_at_rank(n_ / 2) + value_at_rank(n_ / 2 + 1)) / 2;
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(n_)));
    return value_at_rank(std::clamp<std::size_t>(rank, 1, n_));
  }
  const std::array<double, 4> probs{5, 50, 95, 99};
  for (std::size_t i = 0; i < probs.size(); ++i)
    if (probs[i] == p) return p2_[i].q[2];
  throw runtime_error(fmt::format("percentile {} is not tracked beyond {} samples", p, kExactSampleCap));
}

double StreamingSummary::value_at_rank(std::size_t k) const {
  std::size_t seen = 0;
  for (const auto& [value, count] : histogram_) {
    seen += count;
    if (seen >= k) return value;
  }
  throw runtime_error(fmt::format("rank {} of {} samples is beyond the histogram's {}", k, n_, seen));
}

SampleStats StreamingSummary::stats() const {
  if (n_ <= kExactSampleCap) return summarize(exact_);
  SampleStats s;
  s.n = n_;
  s.min = min_;
  s.max = max_;
  s.mean = mean_;
  s.median = percentile(50);
  s.p99 = percentile(99);
  s.stddev = std::sqrt(m2_ / static_cast<double>(n_ - 1));
  return s;
}

IntervalChoice choose_interval(IntervalPolicy policy, std::optional<double> fixed_s,
                               const FailureModel& model, const ClusterConfig& config, int trials,
                               std::uint64_t seed, const TrialProgress& progress) {
  validate(config);
  IntervalChoice c;
  c.policy = policy;
  const double mtbf = job_mtbf_s(model, config.gpus, config.gpus_per_node);
  c.young_s = young_interval(config.costs.checkpoint_s, mtbf);
  c.daly_s = daly_interval(config.costs.checkpoint_s, mtbf);
  switch (policy) {
    case IntervalPolicy::fixed:
      if (!fixed_s || !(*fixed_s > 0))
        throw usage_error("invalid --checkpoint-interval: a fixed interval must be a positive duration");
      if (*fixed_s < config.costs.checkpoint_s)
        throw usage_error(fmt::format("invalid --checkpoint-interval {}: shorter than the checkpoint cost {}",
                                      format_duration(*fixed_s), format_duration(config.costs.checkpoint_s)));
      c.interval_s = *fixed_s;
      return c;
    case IntervalPolicy::young:
      c.interval_s = c.young_s;
      return c;
    case IntervalPolicy::daly:
      c.interval_s = c.daly_s;
      return c;
    case IntervalPolicy::search:
      break;
  }
  // Common random numbers: every candidate sees the same failure times, so differences are the interval's.
  // They are not the final run's: the best of 13 candidates on the very trials it is then reported on would
  // be biased upward (the maximum of noisy estimates), so the search draws its own.
  const int n = std::min(trials, 200);
  const std::uint64_t search_seed = derive_seed(seed, 0x5EA7C4);
  int done = 0;  // trials of earlier candidates, so progress counts across the whole search
  const auto evaluate = [&](double interval) {
    // Candidates clamped to the save cost coincide: each interval is simulated, and listed, once.
    for (const auto& [seen, g] : c.searched)
      if (seen == interval) return g;
    const TrialProgress step =
        progress ? TrialProgress([&](double k) { progress(done + k); }) : TrialProgress();
    const double g = simulate(model, config, interval, n, search_seed, step).goodput_pct.mean();
    done += n;
    c.searched.emplace_back(interval, g);
    return g;
  };
  // No candidate shorter than a save (a fixed interval that short is refused too): those become the save
  // cost itself, one candidate. Ties keep the longest, the one that spends least on saves.
  const auto candidate = [&](double interval) { return std::max(interval, config.costs.checkpoint_s); };
  double best = candidate(c.daly_s), best_g = -1;
  for (int k = -5; k <= 5; ++k) {
    const double interval = candidate(c.daly_s * std::pow(1.25, k));
    const double g = evaluate(interval);
    if (g >= best_g) best = interval, best_g = g;
  }
  const double centre = best;
  for (double f : {1.0 / 1.1, 1.1}) {
    const double interval = candidate(centre * f);
    const double g = evaluate(interval);
    if (g > best_g) best = interval, best_g = g;
  }
  std::sort(c.searched.begin(), c.searched.end());
  c.interval_s = best;
  return c;
}

double flaky_base_rate(double rate, double share, double factor, double leave_share, double horizon_s) {
  const double at_start = rate / (1 - share + share * factor);
  if (!(rate > 0 && share > 0 && factor > 1 && leave_share > 0 && horizon_s > 0)) return at_start;
  // A slot holds a flaky node with probability P(t): flaky → normal at c·factor·leave·(1 - share), normal →
  // flaky at c·leave·share, so P(t) = P∞ + (share - P∞)·exp(-k t), k = c·leave·(factor·(1 - share) + share),
  // P∞ = share / (factor·(1 - share) + share). Expected failures over H: ∫ c·(1 + (factor - 1)·P(t)) dt.
  const double mix = factor * (1 - share) + share;
  const double p_steady = share / mix;
  const auto expected = [&](double c) {
    const double k = c * leave_share * mix;
    const double decayed = k * horizon_s > 1e-12 ? -std::expm1(-k * horizon_s) / k : horizon_s;
    return c * horizon_s + c * (factor - 1) * (p_steady * horizon_s + (share - p_steady) * decayed);
  };
  // The expected count rises with c; at the start's normalisation it is at most the target (P only falls),
  // at the steady state's at least.
  const double target = rate * horizon_s;
  double lo = at_start, hi = rate * (1 - share + share / factor);
  for (int i = 0; i < 200 && hi - lo > 1e-14 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

int interval_search_trials(IntervalPolicy policy, int trials) {
  return policy == IntervalPolicy::search ? 13 * std::min(trials, 200) : 0;
}

double estimated_trial_events(const FailureModel& model, const ClusterConfig& config) {
  const double mtbf = job_mtbf_s(model, config.gpus, config.gpus_per_node);
  double wall = config.work_s > 0 ? std::min(config.wall_s, 2 * config.work_s) : config.wall_s;
  // A fixed work with a spare pool that failures empty faster than repairs refill it (Little's law: nodes in
  // repair = node failure rate x repair time) mostly waits for spares: its trials run to the wall-time cap
  // (100 x the work), with failures arriving all along.
  if (config.work_s > 0 && config.spares) {
    const auto rates = allocation_rates(model, config.gpus, config.gpus_per_node);
    const double in_repair =
        rates.node_attributed_per_node_h * static_cast<double>(config.nodes()) * config.repair_s / 3600.0;
    if (in_repair >= static_cast<double>(*config.spares)) wall = config.wall_s;
  }
  // A node reset costs about a tenth of a failure event (measured on the host build: 200 trials of 36500
  // days at 16384 GPUs, 5.7e7 failures, took 7.5 s; 1e6 trials of 30 days, 2.3e8 failures and 2e9 node
  // resets, took 35 s).
  return wall / mtbf + static_cast<double>(config.nodes()) / 10 + 1;
}

Calibration calibrate_from_report(const reports::Report& report, const std::string& source) {
  Calibration cal;
  const reports::Result* r = nullptr;
  int resilience_results = 0;
  for (const auto& result : report.results)
    if (result.benchmark == "resilience" && result.status != reports::Status::skipped) {
      if (!r) r = &result;
      ++resilience_results;
    }
  if (!r)
    throw input_error(
        fmt::format("--calibrate {}: no resilience result (run `factorybench resilience` first)", source));
  cal.source = fmt::format("{}: result resilience/{}", source, r->name);
  std::optional<reports::LedgerRecoveryTotals> found;
  try {
    found = reports::find_ledger_recovery_totals(*r);
  } catch (const Error& e) {
    throw Error(e.kind(), fmt::format("--calibrate {}: {}", source, e.what()));
  }
  const auto ledger = found.value_or(reports::LedgerRecoveryTotals{});
  const auto missing = [&](const std::string& what) {
    if (std::find(cal.missing.begin(), cal.missing.end(), what) == cal.missing.end())
      cal.missing.push_back(what);
  };
  // The result's own ledger first. Without one (an older report), the summary's badput_s, but only when the
  // report holds this one job: a --policy compare summary totals another policy's job.
  std::map<std::string, double> summary_badput;
  if (!ledger.badput_s && resilience_results == 1 && report.summary.contains("badput_s") &&
      report.summary["badput_s"].is_object())
    for (const auto& [name, v] : report.summary["badput_s"].items()) {
      if (!v.is_number())
        throw input_error(
            fmt::format("--calibrate {}: $.summary.badput_s.{}: expected a number", source, name));
      summary_badput[name] = v.get<double>();
    }
  const auto& badput_s = ledger.badput_s ? *ledger.badput_s : summary_badput;
  // A negative or non-finite figure is a hand-edited or garbled report: refused with its field, not taken
  // as missing (which would calibrate from defaults with a warning that the field is absent).
  const auto checked = [&](std::optional<double> v, const std::string& what) {
    if (v && (!std::isfinite(*v) || *v < 0))
      throw input_error(
          fmt::format("--calibrate {}: {} is {:g}: a time or count must be a finite number "
                      "of at least 0",
                      source, what, *v));
    return v;
  };
  const auto badput = [&](const std::string& part) -> std::optional<double> {
    const auto it = badput_s.find(part);
    return checked(it == badput_s.end() ? std::nullopt : std::optional<double>(it->second),
                   "badput_s." + part);
  };
  // The counts: the ledger's, else the result's metrics (the same figures in an older report).
  const auto count = [&](std::optional<double> in_ledger, const char* name) {
    if (in_ledger) return checked(in_ledger, fmt::format("extra.ledger.{}", name));
    const auto* m = r->metric(name);
    return checked(m ? std::optional<double>(m->value) : std::nullopt, fmt::format("metrics.{}", name));
  };
  const auto failures = count(ledger.failures, "failures");
  auto restarts = count(ledger.restarts, "restarts");
  const auto attempts = checked(ledger.attempts, "extra.ledger.attempts");
  const auto saves = checked(ledger.checkpoint_saves, "extra.ledger.checkpoints.saves");
  const auto blocking =
      checked(ledger.checkpoint_save_blocking_s, "extra.ledger.checkpoints.save_blocking_s");
  if (!restarts && failures) {  // no restart count at all: every failure restarted
    restarts = failures;
    cal.restarts_from = "failures";
  }
  // total / count, or why not: a field absent, nothing counted, or a total of zero.
  const auto per = [&](const char* cost, std::optional<double> total, const std::string& total_name,
                       std::optional<double> n, const std::string& n_name,
                       const char* none) -> std::optional<double> {
    if (!total) missing(total_name);
    if (!n) missing(n_name);
    if (!total || !n) return std::nullopt;
    if (*n == 0) {
      cal.unmeasured[cost] = none;
    } else if (*total == 0) {
      cal.unmeasured[cost] = fmt::format("{} is 0 over {:g} {}", total_name, *n, n_name);
    } else {
      return *total / *n;
    }
    return std::nullopt;
  };
  cal.checkpoint_s = per("checkpoint", blocking, "extra.ledger.checkpoints.save_blocking_s", saves,
                         "extra.ledger.checkpoints.saves", "the run saved no checkpoint");
  const auto async_commits =
      checked(ledger.checkpoint_async_commits, "extra.ledger.checkpoints.async_commits");
  const auto async_commit_s =
      checked(ledger.checkpoint_async_commit_s, "extra.ledger.checkpoints.async_commit_s");
  if (async_commits && async_commit_s && *async_commits > 0) {
    cal.commit_s = *async_commit_s / *async_commits;
  } else if (async_commits && *async_commits == 0 && saves && *saves > 0) {
    cal.commit_s = 0;  // every save synchronous: durable when it stops blocking
    cal.commit_sync = true;
  }
  // Per failure: detection latency; relaunch = supervisor relaunch + the re-attempt's init (launch, MPI,
  // model build), which the simulator's relaunch phase includes; restore = restore time per restart.
  cal.detection_s = per("detection", badput("detection"), "badput_s.detection", failures, "failures",
                        "the run had no failure");
  for (const auto& [kind, n] : ledger.failures_by_kind)
    if (n > 0) cal.detection_from[kind] = n;
  cal.detection_in_step_only =
      cal.detection_s && !cal.detection_from.empty() &&
      std::all_of(cal.detection_from.begin(), cal.detection_from.end(),
                  [](const auto& kind_n) { return kind_n.first == "sdc" || kind_n.first == "nan"; });
  cal.relaunch_s = per("relaunch", badput("relaunch"), "badput_s.relaunch", restarts, cal.restarts_from,
                       "the run restarted nothing");
  if (cal.relaunch_s) {
    const auto init = badput("init");
    if (init && attempts && *attempts > 0) {
      *cal.relaunch_s += *init / *attempts;
      cal.relaunch_has_init = true;
    } else {
      missing(!init ? "badput_s.init" : "extra.ledger.attempts");
    }
  }
  cal.restore_s = per("restore", badput("ckpt_restore"), "badput_s.ckpt_restore", restarts, cal.restarts_from,
                      "the run restarted nothing");
  return cal;
}

}  // namespace fb::resilience
