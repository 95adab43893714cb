// The simulator's event loop (resilience/cluster_simulator.hpp): a trial's discrete events (failures and the
// ends of recovery phases) over the node slots, the spare pool and the repairs, and the trials of simulate().
#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "resilience/checkpoint_interval.hpp"
#include "resilience/cluster_simulator.hpp"

namespace fb::resilience {

namespace {

struct Node {
  bool flaky = false;
  bool straggler = false;
  bool empty = false;  // the slot waits for a replacement
  std::uint16_t failures = 0;
};

// Slots with a property, O(1) insert/erase/pick.
class SlotSet {
 public:
  void reset(std::size_t slots) {
    items_.clear();
    pos_.assign(slots, -1);
  }
  void insert(std::int32_t slot) {
    if (pos_[slot] >= 0) return;
    pos_[slot] = static_cast<std::int32_t>(items_.size());
    items_.push_back(slot);
  }
  void erase(std::int32_t slot) {
    const auto at = pos_[slot];
    if (at < 0) return;
    const auto last = items_.back();
    items_[at] = last;
    pos_[last] = at;
    items_.pop_back();
    pos_[slot] = -1;
  }
  std::size_t size() const { return items_.size(); }
  std::int32_t operator[](std::size_t i) const { return items_[i]; }
  const std::vector<std::int32_t>& items() const { return items_; }

 private:
  std::vector<std::int32_t> items_;
  std::vector<std::int32_t> pos_;
};

class TrialEngine {
 public:
  TrialEngine(const FailureModel& model, const ClusterConfig& config, double interval_s)
      : model_(model), cfg_(config), interval_(interval_s), nodes_(config.nodes()) {
    const auto rates = allocation_rates(model, config.gpus, config.gpus_per_node);
    job_rate_s_ = rates.job_level_h / 3600.0;
    double leaving_h = 0;  // node-attributed failures whose node must leave, one node
    for (std::size_t i = 0; i < model.categories.size(); ++i) {
      const auto& c = model.categories[i];
      const bool on_node = c.traits.node_attributed && c.scope != FailureScope::job;
      if (on_node) {
        node_acc_ += rates.per_category_h[i] / static_cast<double>(nodes_);
        node_cats_.push_back({node_acc_, i});
        if (c.traits.needs_replacement) leaving_h += rates.per_category_h[i] / static_cast<double>(nodes_);
      } else {
        job_acc_ += rates.per_category_h[i];
        job_cats_.push_back({job_acc_, i});
      }
    }
    // Flaky nodes fail flaky_factor× as often as the rest; the job still expects the published count over its
    // time (the window, or a fixed work's time to train by Daly's exponential model), replacements shedding
    // flaky nodes.
    const double node_h = rates.node_attributed_per_node_h;
    double horizon_s = cfg_.wall_s;
    if (cfg_.work_s > 0) {
      const double g = exponential_goodput(interval_, cfg_.costs.checkpoint_s, cfg_.costs.restart_s(),
                                           3600.0 / rates.total_h, cfg_.costs.commit_s);
      horizon_s = g > 0 ? std::min(cfg_.wall_s, cfg_.work_s / g) : cfg_.wall_s;
    }
    node_rate_s_ = flaky_base_rate(node_h / 3600.0, cfg_.flaky_share, cfg_.flaky_factor,
                                   node_h > 0 ? leaving_h / node_h : 0.0, horizon_s);
  }

  // `within`: called every million events with the share of the trial done (of the window, or of the fixed
  // work when that is further: a fixed work ends the trial at the work or at the window, whichever comes
  // first), so one long trial is not a silent one.
  TrialOutcome run(std::uint64_t trial_seed, const std::function<void(double)>& within = {}) {
    start_trial(trial_seed);
    const double wall = cfg_.wall_s;
    double t = 0, phase_end = 0;
    Progress p;
    Phase phase = Phase::running;
    std::uint64_t events = 0;
    while (t < wall) {
      if (within && ++events % (1u << 20) == 0)
        within(
            std::min(1.0, std::max(t / wall, cfg_.work_s > 0 ? out_.split.productive / cfg_.work_s : 0.0)));
      const double next_failure = t + exponential(total_rate());
      if (phase == Phase::running) {
        const double done_at = cfg_.work_s > 0 ? t + time_to_finish(p) : wall;
        const double end = std::min({next_failure, wall, done_at});
        run_segment(end - t, p);
        t = end;
        if (end == done_at && done_at <= wall) {
          out_.wall_s = t;
          break;
        }
        if (next_failure >= wall) break;
        out_.split.redone += p.unc_work + p.unc_slow;  // lost since the last checkpoint
        p = Progress{};
      } else {
        const double end = std::min({next_failure, phase_end, wall});
        recovery_bucket(phase) += end - t;
        t = end;
        if (t >= wall) break;
        if (next_failure >= phase_end) {
          std::tie(phase, phase_end) = next_phase(phase, t);
          continue;
        }
      }
      // A failure, while running or recovering (recovery then starts over).
      on_failure(t);
      phase = Phase::detection;
      phase_end = t + cfg_.costs.detection_s;
    }
    return finish_trial(p);
  }

 private:
  enum class Phase { running, detection, spare_wait, relaunch, restore };
  // Running state: position in the compute/checkpoint cycle and the uncommitted work (wall seconds, split
  // into reference-speed work and straggler time).
  struct Progress {
    double pos = 0, unc_work = 0, unc_slow = 0;
    bool pending = false;  // an asynchronous save taken at the cycle's start is not yet durable
    bool first = true;     // in the first cycle since the (re)start: its save finds no write in flight
  };

  void start_trial(std::uint64_t trial_seed) {
    rng_ = SplitMix64(trial_seed);
    out_ = TrialOutcome{};
    out_.failures_by_category.assign(model_.categories.size(), 0);
    reset_nodes();
  }

  // The window closes (or the work is done): work since the last checkpoint is kept (the job's final save
  // lies outside it).
  TrialOutcome finish_trial(const Progress& p) {
    out_.split.productive += p.unc_work;
    out_.split.straggler += p.unc_slow;
    if (out_.wall_s == 0) {
      out_.wall_s = cfg_.wall_s;
      out_.finished = cfg_.work_s <= 0;
    }
    return std::move(out_);
  }

  double& recovery_bucket(Phase phase) {
    switch (phase) {
      case Phase::detection:
        return out_.split.detection;
      case Phase::spare_wait:
        return out_.split.spare_wait;
      case Phase::relaunch:
        return out_.split.relaunch;
      case Phase::restore:
      case Phase::running:
        break;
    }
    return out_.split.restore;
  }

  // The recovery phase after `phase` ends at `t`, and when that one ends: detection waits for spares to
  // fill the empty slots (if any are short), then stragglers are drained and the job relaunches, restores
  // and runs.
  std::pair<Phase, double> next_phase(Phase phase, double t) {
    switch (phase) {
      case Phase::detection:
      case Phase::spare_wait: {
        const double wait_until = fill_empty_slots(t);
        if (wait_until > t) return {Phase::spare_wait, wait_until};
        drain_stragglers(t);
        return {Phase::relaunch, t + cfg_.costs.relaunch_s};
      }
      case Phase::relaunch:
        return {Phase::restore, t + cfg_.costs.restore_s};
      case Phase::restore:
      case Phase::running:
        break;
    }
    return {Phase::running, t};
  }

  double exponential(double rate) { return -std::log1p(-rng_.uniform()) / rate; }
  std::int64_t pick(std::int64_t n) {
    return std::min<std::int64_t>(static_cast<std::int64_t>(rng_.uniform() * static_cast<double>(n)), n - 1);
  }
  Node fresh_node() {
    Node n;
    n.flaky = cfg_.flaky_share > 0 && rng_.uniform() < cfg_.flaky_share;
    n.straggler = cfg_.straggler_share > 0 && rng_.uniform() < cfg_.straggler_share;
    return n;
  }

  double total_rate() const {
    return job_rate_s_ + node_rate_s_ * (static_cast<double>(nodes_) +
                                         (cfg_.flaky_factor - 1.0) * static_cast<double>(flaky_.size()));
  }

  void reset_nodes() {
    slots_.assign(static_cast<std::size_t>(nodes_), Node{});
    flaky_.reset(slots_.size());
    slow_.reset(slots_.size());
    empty_.reset(slots_.size());
    pool_.clear();
    repairs_.clear();
    if (cfg_.flaky_share > 0 || cfg_.straggler_share > 0)
      for (std::size_t i = 0; i < slots_.size(); ++i) place(static_cast<std::int32_t>(i), fresh_node());
    if (cfg_.spares)
      for (std::int64_t i = 0; i < *cfg_.spares; ++i) pool_.push_back(fresh_node());
  }

  void place(std::int32_t slot, Node n) {
    n.empty = false;
    slots_[slot] = n;
    empty_.erase(slot);
    if (n.flaky) flaky_.insert(slot);
    if (n.straggler) slow_.insert(slot);
  }

  // Takes the node out of its slot: to repair (back in the pool later), retired (drained), or gone (unlimited
  // spares: the replacement is a fresh node either way).
  void remove(std::int32_t slot, double now, bool retire) {
    Node n = slots_[slot];
    flaky_.erase(slot);
    slow_.erase(slot);
    empty_.insert(slot);
    slots_[slot] = Node{};
    slots_[slot].empty = true;
    if (retire) {
      ++out_.drained_nodes;
    } else if (cfg_.spares) {
      repairs_.push_back({now + cfg_.repair_s, n});
    }
  }

  // A replacement if one is at hand: unlimited spares, or the pool after collecting repaired nodes.
  std::optional<Node> take_spare(double now) {
    if (!cfg_.spares) return fresh_node();
    while (!repairs_.empty() && repairs_.front().first <= now) {
      pool_.push_back(repairs_.front().second);
      repairs_.pop_front();
    }
    if (pool_.empty()) return std::nullopt;
    Node n = pool_.back();
    pool_.pop_back();
    return n;
  }

  // Fills empty slots; returns `now` when all are filled, else the time the next repaired node returns
  // (the end of the window when none is in repair).
  double fill_empty_slots(double now) {
    while (empty_.size() > 0) {
      auto spare = take_spare(now);
      if (!spare) return repairs_.empty() ? cfg_.wall_s : repairs_.front().first;
      place(empty_[0], *spare);
    }
    return now;
  }

  // With drain, the restart is the moment to swap slow nodes out, as long as spares are at hand.
  void drain_stragglers(double now) {
    if (cfg_.drain != DrainPolicy::drain || slow_.size() == 0) return;
    const std::vector<std::int32_t> slow = slow_.items();
    for (auto slot : slow) {
      auto spare = take_spare(now);
      if (!spare) return;
      remove(slot, now, /*retire=*/true);
      place(slot, *spare);
    }
  }

  void on_failure(double now) {
    ++out_.failures;
    const double total = total_rate();
    double u = rng_.uniform() * total;
    const double job_rate = job_rate_s_;
    if (u < job_rate || node_cats_.empty()) {
      ++out_.failures_by_category[pick_category(job_cats_, job_acc_)];
      return;
    }
    u -= job_rate;
    std::int32_t slot;
    const double flaky_rate = node_rate_s_ * cfg_.flaky_factor * static_cast<double>(flaky_.size());
    if (u < flaky_rate) {
      slot = flaky_[static_cast<std::size_t>(pick(static_cast<std::int64_t>(flaky_.size())))];
    } else {
      do slot = static_cast<std::int32_t>(pick(nodes_));
      while (slots_[slot].flaky);
    }
    const std::size_t cat = pick_category(node_cats_, node_acc_);
    ++out_.failures_by_category[cat];
    Node& n = slots_[slot];
    if (n.empty) return;  // already waiting for its replacement
    if (n.failures < std::numeric_limits<std::uint16_t>::max()) ++n.failures;
    const bool drain = cfg_.drain == DrainPolicy::drain && n.failures >= cfg_.drain_after;
    if (drain || model_.categories[cat].traits.needs_replacement) remove(slot, now, drain);
  }

  std::size_t pick_category(const std::vector<std::pair<double, std::size_t>>& cats, double total) {
    const double u = rng_.uniform() * total;
    for (const auto& [acc, index] : cats)
      if (u < acc) return index;
    return cats.back().second;
  }

  // The wait of a save for the previous write, with asynchronous saves whose write W outlasts the interval T
  // (one save in flight at a time): W - T. The first save after a (re)start finds none in flight and does not
  // wait (Progress::first).
  double write_wait_s() const { return std::max(0.0, cfg_.costs.commit_s - interval_); }
  // The blocking part of a save after the first: C and the wait.
  double blocking_s() const { return cfg_.costs.checkpoint_s + write_wait_s(); }

  // Fixed work: wall seconds from `p` until the kept work (committed + uncommitted) reaches work_s, with no
  // failure in between. Inverts the compute-then-checkpoint cycles of run_segment.
  double time_to_finish(const Progress& p) const {
    const double speed = slow_.size() > 0 ? 1.0 / cfg_.straggler_factor : 1.0;
    const double remaining = std::max(0.0, cfg_.work_s - out_.split.productive - p.unc_work) / speed;
    if (!p.first || write_wait_s() == 0) return time_to_compute(p.pos, remaining);
    // The first cycle, T + C: done within its compute, or on from the next cycle's start.
    const double left = interval_ - std::min(p.pos, interval_);
    if (remaining <= left) return remaining;
    return interval_ + cfg_.costs.checkpoint_s - p.pos + time_to_compute(0, remaining - left);
  }

  // Wall seconds from position `pos` of the regular cycles (T, then blocking_s) until `remaining` more
  // seconds of compute are done; a finish at the end of a compute stretch takes no save after it.
  double time_to_compute(double pos, double remaining) const {
    const double T = interval_, C = blocking_s(), L = T + C;
    const double start = std::floor(pos / L) * T + std::min(std::fmod(pos, L), T);  // compute done in cycle
    const double target = start + remaining;
    const double cycles = std::floor(target / T);
    double x = cycles * L + (target - cycles * T);
    if (target - cycles * T == 0 && cycles > 0) x = (cycles - 1) * L + T;  // ends right before a save
    return std::max(0.0, x - pos);
  }

  // Runs the job for `d` seconds from `p`: the first cycle since the (re)start (T, then C), then the regular
  // ones (T, then blocking_s, whose save waits for the previous write when W > T).
  void run_segment(double d, Progress& p) {
    if (p.first && write_wait_s() > 0) {
      const double first_cycle = interval_ + cfg_.costs.checkpoint_s;
      if (p.pos + d < first_cycle) {
        run_cycles(d, cfg_.costs.checkpoint_s, p);
        return;
      }
      const double rest = d - (first_cycle - p.pos);
      run_cycles(first_cycle - p.pos, cfg_.costs.checkpoint_s, p);
      // At the first cycle's end, exactly (not to rounding): its save taken, its write just begun.
      p.pos = 0;
      p.pending = true;
      d = std::max(0.0, rest);
    }
    p.first = false;
    run_cycles(d, blocking_s(), p);
  }

  // Runs the job for `d` seconds from cycle position `p.pos` of cycles of compute T, then a blocking save of
  // `block` seconds. The save taken at a cycle's end is durable W (commit_s) later, at position W of the next
  // cycle (W < T + block: block waits for a write that outlasts T), and covers the compute before it; W = 0:
  // durable at the cycle's end. Compute not yet covered by a durable save is uncommitted: a failure loses it.
  void run_cycles(double d, double block, Progress& p) {
    const double T = interval_, C = block, L = T + C, W = cfg_.costs.commit_s;
    const auto compute_upto = [&](double x) { return std::floor(x / L) * T + std::min(std::fmod(x, L), T); };
    const double end = p.pos + d;
    const double compute = compute_upto(end) - compute_upto(p.pos);
    out_.split.checkpoint += d - compute;
    const double speed = slow_.size() > 0 ? 1.0 / cfg_.straggler_factor : 1.0;
    // Cycle boundaries crossed (saves taken); boundary 0 is the current cycle's start, whose save is durable
    // at W when it is still pending. `covered`: the boundary of the last save durable by `end`.
    const double saves = std::floor(end / L);
    std::optional<double> covered;
    if (saves >= 1 && end >= saves * L + W)
      covered = saves;
    else if (saves >= 2)
      covered = saves - 1;
    else if (p.pending && end >= W)
      covered = 0;
    const double in_cycle = std::fmod(end, L);
    if (covered) {
      // Compute after the covering boundary stays uncommitted; the rest (and all that was) is durable.
      const double open = *covered == saves ? std::min(in_cycle, T) : compute_upto(end) - *covered * T;
      out_.split.productive += p.unc_work;
      out_.split.straggler += p.unc_slow;
      out_.split.productive += (compute - open) * speed;
      out_.split.straggler += (compute - open) * (1 - speed);
      p.unc_work = open * speed;
      p.unc_slow = open * (1 - speed);
    } else {
      p.unc_work += compute * speed;
      p.unc_slow += compute * (1 - speed);
    }
    p.pending = W > 0 && (saves >= 1 ? end < saves * L + W : p.pending && end < W);
    p.pos = in_cycle;
  }

  const FailureModel& model_;
  const ClusterConfig& cfg_;
  const double interval_;
  const std::int64_t nodes_;
  double job_rate_s_ = 0, node_rate_s_ = 0, job_acc_ = 0, node_acc_ = 0;
  std::vector<std::pair<double, std::size_t>> job_cats_, node_cats_;  // (cumulative weight, category)
  SplitMix64 rng_{0};
  TrialOutcome out_;
  std::vector<Node> slots_;
  SlotSet flaky_, slow_, empty_;
  std::vector<Node> pool_;
  std::deque<std::pair<double, Node>> repairs_;  // FIFO: every repair takes the same time
};

}  // namespace

TrialOutcome simulate_trial(const FailureModel& model, const ClusterConfig& config, double interval_s,
                            std::uint64_t trial_seed) {
  validate(config);
  TrialEngine engine(model, config, interval_s);
  return engine.run(trial_seed);
}

SimulationSummary simulate(const FailureModel& model, const ClusterConfig& config, double interval_s,
                           int trials, std::uint64_t seed, const TrialProgress& progress) {
  validate(config);
  if (!(interval_s > 0) || !std::isfinite(interval_s))
    throw usage_error(
        fmt::format("invalid --checkpoint-interval {}: must be a positive duration", interval_s));
  if (trials < 1 || trials > kMaxTrials)
    throw usage_error(fmt::format("invalid --trials {}: must be in [1, {}]", trials, kMaxTrials));
  SimulationSummary s;
  s.config = config;
  s.interval_s = interval_s;
  s.trials = trials;
  s.seed = seed;
  s.model_mtbf_s = job_mtbf_s(model, config.gpus, config.gpus_per_node);
  s.expected_failures = config.wall_s / s.model_mtbf_s;
  s.mean_failures_by_category.assign(model.categories.size(), 0.0);

  TrialEngine engine(model, config, interval_s);  // one engine: trial state is reused, not accumulated
  std::array<double, 8> split_sum{}, pct_sum{};
  double drained = 0, wall_sum = 0;
  for (int i = 0; i < trials; ++i) {
    const auto within = progress ? std::function<void(double)>([&](double f) { progress(i + f); })
                                 : std::function<void(double)>();
    const auto o = engine.run(derive_seed(seed, static_cast<std::uint64_t>(i)), within);
    const double wall = o.wall_s;
    wall_sum += wall;
    s.wall_s.add(wall);
    if (!o.finished) ++s.unfinished;
    s.goodput_pct.add(100.0 * o.split.productive / wall);
    // ETTR (REFERENCES.md; as the resilience ledger counts it): the wall time not lost to failures, i.e. less
    // re-done work and the restart (detection, relaunch, restore, waiting for a spare). Checkpoint saves and
    // slow steps are the running job's time.
    s.ettr.add((o.split.productive + o.split.straggler + o.split.checkpoint) / wall);
    s.failures.add(static_cast<double>(o.failures));
    s.failures_total += static_cast<double>(o.failures);
    const auto parts = as_array(o.split);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      split_sum[k] += parts[k];
      pct_sum[k] += 100.0 * parts[k] / wall;
    }
    for (std::size_t k = 0; k < o.failures_by_category.size(); ++k)
      s.mean_failures_by_category[k] += static_cast<double>(o.failures_by_category[k]);
    drained += static_cast<double>(o.drained_nodes);
    if (progress) progress(i + 1);
  }
  const double n = trials;
  for (auto& v : s.mean_failures_by_category) v /= n;
  s.mean_split = {split_sum[0] / n, split_sum[1] / n, split_sum[2] / n, split_sum[3] / n,
                  split_sum[4] / n, split_sum[5] / n, split_sum[6] / n, split_sum[7] / n};
  for (std::size_t k = 0; k < pct_sum.size(); ++k) s.mean_split_pct[k] = pct_sum[k] / n;
  s.mean_drained_nodes = drained / n;
  s.mean_wall_s = wall_sum / n;
  if (config.work_s > 0) s.expected_failures = s.mean_wall_s / s.model_mtbf_s;
  s.sim_mtbf_s = s.failures_total > 0 ? wall_sum / s.failures_total : std::numeric_limits<double>::infinity();
  return s;
}

}  // namespace fb::resilience
