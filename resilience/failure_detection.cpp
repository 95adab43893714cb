// Failure detection in the training hooks: the hang timeout and the watchdog thread that applies it, the
// straggler score, the SDC vote of the replicas' checksums and the origin of a NaN.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/hang_watchdog.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"
#include "resilience/train_resilience_hooks.hpp"

namespace fb::resilience {
namespace {

constexpr int kWatchdogExit = 75;  // the exit status of a rank whose watchdog declared a hang

}  // namespace

double HangTimeoutPolicy::timeout(double median_step_s, bool any_step_done) const {
  if (fixed_s) return *fixed_s;
  if (!any_step_done) return first_step_s;
  return std::max(floor_s, multiple * median_step_s);
}

HangTimeoutPolicy parse_hang_timeout(const std::string& text) {
  HangTimeoutPolicy p;
  if (text == "auto") return p;
  p.fixed_s = parse_duration(text, "--hang-timeout");
  if (!(*p.fixed_s > 0))
    throw usage_error(fmt::format("invalid --hang-timeout '{}': must be positive or auto", text));
  // The watchdog looks twice a second, and a step, a checkpoint's hand-off or a scheduler stall on a loaded
  // node takes that long: a shorter limit takes an ordinary step for a hang (as locate and health refuse it).
  if (*p.fixed_s < 1)
    throw usage_error(fmt::format(
        "invalid --hang-timeout '{}': auto or at least 1s; a shorter limit takes an ordinary step for a hang",
        text));
  return p;
}

std::vector<double> straggler_scores(const std::vector<double>& times) {
  const double median = summarize(times).median;
  std::vector<double> out;
  for (const double t : times) out.push_back(t > 0 ? median / t : 1.0);
  return out;
}

std::vector<bool> sdc_outliers(const std::vector<std::uint64_t>& checksums, const std::vector<int>& group) {
  std::vector<bool> out(checksums.size(), false);
  std::map<int, std::map<std::uint64_t, int>> votes;
  std::map<int, int> members;
  for (std::size_t i = 0; i < checksums.size(); ++i) {
    ++votes[group[i]][checksums[i]];
    ++members[group[i]];
  }
  for (std::size_t i = 0; i < checksums.size(); ++i) {
    const auto& v = votes[group[i]];
    const auto best =
        std::max_element(v.begin(), v.end(), [](auto& a, auto& b) { return a.second < b.second; });
    if (2 * best->second > members[group[i]] && checksums[i] != best->first) out[i] = true;
  }
  return out;
}

bool replicas_disagree(const std::vector<std::uint64_t>& checksums, const std::vector<int>& group) {
  std::map<int, std::uint64_t> first;
  for (std::size_t i = 0; i < checksums.size(); ++i) {
    const auto [it, fresh] = first.emplace(group[i], checksums[i]);
    if (!fresh && it->second != checksums[i]) return true;
  }
  return false;
}

int TrainResilienceHooks::failing_rank_from_heartbeats() const {
  // The rank that has not entered the step the others are blocked in is the one that hangs; in a one-rank
  // job there are no others to compare with, and the hang is that rank's.
  if (mpi_.size() == 1) return 0;
  std::vector<long long> entered;
  for (int r = 0; r < mpi_.size(); ++r) {
    long long e = -1, c = -1;
    const auto path = dir_ / "heartbeat" / fmt::format("rank-{:05d}", r);
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      if (std::fscanf(f, "%lld %lld", &e, &c) != 2) e = -1;
      std::fclose(f);
    }
    entered.push_back(e);
  }
  const auto lo = std::min_element(entered.begin(), entered.end());
  const auto hi = std::max_element(entered.begin(), entered.end());
  if (*lo == *hi || std::count(entered.begin(), entered.end(), *lo) != 1) return -1;
  return static_cast<int>(lo - entered.begin());
}

int TrainResilienceHooks::nan_origin(bool local_finite) {
  const int mine = local_finite ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(mpi_.size()));
  all = allgather(mpi_, mine);
  const auto it = std::find(all.begin(), all.end(), 0);
  return it == all.end() ? -1 : static_cast<int>(it - all.begin());
}

bool TrainResilienceHooks::vote_sdc(std::int64_t step) {
  const std::uint64_t mine = state_->replicated_checksum();
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(mpi_.size()));
  std::vector<int> groups(static_cast<std::size_t>(mpi_.size()));
  sums = allgather(mpi_, mine);
  groups = allgather(mpi_, replica_group_);
  const auto odd = sdc_outliers(sums, groups);
  const auto it = std::find(odd.begin(), odd.end(), true);
  // Two replicas that differ (or a tie) name nobody, but the state is corrupt: roll back all the same.
  if (it == odd.end() && !replicas_disagree(sums, groups)) return false;
  if (mpi_.is_root()) {
    auto e = make_event(event::failure_detected);
    e["kind"] = "sdc";
    e["rank"] = it == odd.end() ? -1 : static_cast<int>(it - odd.begin());
    e["step"] = step;
    e["how"] =
        it == odd.end()
            ? "replica checksum vote: the data-parallel replicas differ and no majority names the odd one"
            : "replica checksum vote: the odd one out of its data-parallel group";
    log(e, Durability::fsync);
  }
  return true;
}

void TrainResilienceHooks::check_stragglers(std::int64_t step) {
  std::vector<double> times(static_cast<std::size_t>(mpi_.size()));
  times = allgather(mpi_, window_compute_);
  window_compute_ = 0;
  if (!mpi_.is_root()) return;
  const auto scores = straggler_scores(times);
  for (int r = 0; r < mpi_.size(); ++r) {
    if (scores[static_cast<std::size_t>(r)] >= o_.straggler_threshold) continue;
    auto e = make_event(event::straggler_detected);
    e["rank"] = r;
    e["step"] = step;
    e["score"] = scores[static_cast<std::size_t>(r)];
    e["threshold"] = o_.straggler_threshold;
    e["window_steps"] = o_.check_every;
    log(e);
  }
}

void TrainResilienceHooks::watchdog_loop() {
  // Rank 0 decides at the timeout; the others wait twice as long (in case rank 0 itself is the one stuck).
  const double grace = mpi_.is_root() ? 1.0 : 2.0;
  // Every rank also publishes its communication call state (core/call_log.hpp) twice a second to
  // <run dir>/calls/, a side channel that does not depend on the stuck communicator: at a hang, the ranks'
  // states name the call the others wait in and the rank that never entered it (issue 17).
  const RankCallRecord identity{mpi_.rank(), mpi_.hostname(), mpi_.local_rank(), {}, 0, false};
  const auto calls = dir_ / "calls";
  for (int tick = 0; !stop_; ++tick) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (tick % 5 == 0) publish_call_state(calls, identity, false);
    const double saving_since = saving_since_.load();
    const bool in_save = saving_since >= 0;
    const double step_limit = grace * hang_.timeout(median_step_.load(), any_step_.load());
    const double limit = in_save ? std::max({step_limit, grace * 60.0, 10 * longest_save_s_.load(),
                                             restoring_ ? grace * restore_allowance_s_.load() : 0.0})
                                 : step_limit;
    const double idle = wall_now() - (in_save ? saving_since : last_progress_.load());
    if (idle < limit || stop_) continue;
    auto e = make_event(event::failure_detected);
    int culprit = failing_rank_from_heartbeats();
    e["kind"] = "hang";
    std::vector<std::string> diagnosis;
    try {
      publish_call_state(calls, identity, false);
      // A rank in a call for half the step timeout is stuck in it: the step it belongs to began after the
      // last completed step, and a step takes a fraction of the timeout.
      const auto states = read_call_states(calls, mpi_.size());
      diagnosis = diagnose_hang(states, limit / 2);
      // The heartbeats name no rank when every one had finished the same step; a single frozen rank (its
      // call state stopped updating: SIGSTOP, swapped out) is the one the others wait for.
      if (const auto frozen = frozen_ranks(states); culprit < 0 && frozen.size() == 1)
        culprit = frozen.front();
    } catch (...) {
    }
    e["rank"] = culprit;
    e["calls"] = diagnosis;
    e["how"] = fmt::format(
        "watchdog on rank {}: {} {:.1f} s (timeout {:.1f} s){}{}", mpi_.rank(),
        in_save ? (restoring_ ? "the checkpoint restore has not finished in"
                              : "a checkpoint save has not finished in")
                : "no step completed in",
        idle, limit,
        culprit >= 0 ? fmt::format("; rank {} has not entered the step the others wait in", culprit) : "",
        diagnosis.empty() ? "" : "; " + diagnosis.front());
    try {
      log(e, Durability::fsync);
    } catch (...) {
    }
    // One line for whoever reads the console (alone, train has no supervisor to explain exit 75).
    std::fprintf(stderr, "factorybench: error: hang: %s (exit %d; the timeline is in %s)\n",
                 e["how"].get<std::string>().c_str(), kWatchdogExit, (dir_ / "events.jsonl").c_str());
    std::fflush(nullptr);
    std::_Exit(kWatchdogExit);  // the launcher tears the job down; the supervisor restarts it
  }
}

}  // namespace fb::resilience
