#include "resilience/train_resilience_hooks.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hang_watchdog.hpp"
#include "core/logging.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"
#include "resilience/checkpoint_interval.hpp"
#include "resilience/checkpoint_test_hook.hpp"

namespace fb::resilience {
namespace fs = std::filesystem;
namespace {

constexpr int kWatchdogExit = 75;  // the exit status of a rank whose watchdog declared a hang

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void sleep_s(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace

void validate_resilience_options(const ResilienceOptions& o, int world_size) {
  if (o.run_dir.empty()) {
    for (const auto& [set, name] : {std::pair{o.checkpoint_every > 0, "--checkpoint-every"},
                                    {!o.checkpoint_interval.empty(), "--checkpoint-interval"},
                                    {o.resume, "--resume"},
                                    {!o.faults.empty(), "--faults"},
                                    {o.async_checkpoint, "--async-checkpoint"}})
      if (set) throw usage_error(fmt::format("{} needs --run-dir DIR", name));
    return;
  }
  if (o.checkpoint_every < 0)
    throw usage_error(fmt::format("invalid --checkpoint-every {}: must not be negative", o.checkpoint_every));
  if (o.checkpoint_every > 0 && !o.checkpoint_interval.empty())
    throw usage_error("--checkpoint-every and --checkpoint-interval are exclusive");
  if (o.checkpoint_interval == "auto") {
    if (!(o.mtbf_s > 0))
      throw usage_error("--checkpoint-interval auto needs --mtbf DURATION (Daly's interval)");
  } else if (!o.checkpoint_interval.empty() &&
             !(parse_duration(o.checkpoint_interval, "--checkpoint-interval") > 0)) {
    throw usage_error(
        fmt::format("invalid --checkpoint-interval '{}': must be positive", o.checkpoint_interval));
  }
  if (o.keep < 1) throw usage_error(fmt::format("invalid --keep {}: must be at least 1", o.keep));
  if (!(o.straggler_threshold > 0 && o.straggler_threshold <= 1))
    throw usage_error(
        fmt::format("invalid --straggler-threshold {}: must be in (0, 1]", o.straggler_threshold));
  if (o.check_every < 1)
    throw usage_error(fmt::format("invalid --check-every {}: must be at least 1", o.check_every));
  parse_hang_timeout(o.hang_timeout);
  if (!o.faults.empty()) (void)load_fault_plan(o.faults, world_size + 64, 7 * 86400.0, o.seed);
}

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

TrainResilienceHooks::TrainResilienceHooks(ResilienceOptions options, MpiContext& mpi, int replica_group)
    : o_(std::move(options)),
      mpi_(mpi),
      replica_group_(replica_group),
      slot_(mpi.rank()),
      attempt_(env_int("FB_ATTEMPT", 1)),
      dir_(o_.run_dir),
      store_(dir_ / "checkpoints"),
      hang_(parse_hang_timeout(o_.hang_timeout)) {
  // The plan is checked against the real world size before the run dir is touched: a bad --faults leaves
  // nothing behind (issue 16).
  const int spares = std::max(0, env_int("FB_SPARES", 0));
  if (!o_.faults.empty())
    plan_ = load_fault_plan(o_.faults, mpi.size() + spares, 7 * 86400.0, o_.seed, spares);
  const double created = wall_now();
  std::error_code ec;
  fs::create_directories(dir_ / "heartbeat", ec);
  fs::create_directories(dir_ / "calls", ec);
  log_ = std::make_unique<EventLog>(dir_ / "events.jsonl");
  // Placement written by the supervisor: rank → slot (a spare replaces a drained rank).
  if (fs::exists(dir_ / "placement.json", ec)) {
    const auto j = nlohmann::json::parse(read_text_file(dir_ / "placement.json"), nullptr, false);
    const auto r = static_cast<std::size_t>(mpi.rank());
    if (j.is_object() && j.contains("slots") && j["slots"].is_array() && r < j["slots"].size())
      slot_ = j["slots"][r].get<int>();
    if (j.is_object() && j.contains("since_s") && j["since_s"].is_array() && r < j["since_s"].size() &&
        j["since_s"][r].is_number())
      slot_since_s_ = j["since_s"][r].get<double>();
  }
  if (const char* d = std::getenv("FB_DEADLINE"); d && *d) deadline_ = std::atof(d);
  fired_ = std::make_unique<FiredRecord>(dir_ / "faults.fired");
  heartbeat_fd_ = ::open((dir_ / "heartbeat" / fmt::format("rank-{:05d}", mpi.rank())).c_str(),
                         O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (mpi.is_root() && !std::getenv("FB_SUPERVISED")) {
    // Run without the supervisor: this process is the whole job's attempt.
    const auto existing = read_event_log(log_->path());
    if (existing.events.empty()) {
      auto e = make_event(event::job_start, created);
      e["ranks"] = mpi.size();
      log(e, Durability::fsync);
    }
    auto e = make_event(event::attempt_start, created);
    e["attempt"] = attempt_;
    log(e, Durability::fsync);
  }
}

TrainResilienceHooks::~TrainResilienceHooks() {
  stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (heartbeat_fd_ >= 0) ::close(heartbeat_fd_);
}

void TrainResilienceHooks::log(nlohmann::json e, Durability durability) {
  e["attempt"] = attempt_;
  if (!e.contains("rank")) e["by_rank"] = mpi_.rank();
  log_->append(std::move(e), durability);
}

void TrainResilienceHooks::heartbeat(std::int64_t entered, std::int64_t completed) {
  if (heartbeat_fd_ < 0) return;
  const auto text = fmt::format("{:>12} {:>12}\n", entered, completed);
  if (::pwrite(heartbeat_fd_, text.data(), text.size(), 0) < 0) return;
}

int TrainResilienceHooks::failing_rank_from_heartbeats() const {
  // The rank that has not entered the step the others are blocked in is the one that hangs.
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

std::int64_t TrainResilienceHooks::on_start(workloads::TrainStateAccess& state) {
  state_ = &state;
  const std::uint64_t bytes = std::max<std::uint64_t>(state.bytes(), o_.state_bytes);
  if (mpi_.is_root()) log(make_event(event::init_done), Durability::fsync);
  // Job start (time triggers count from it), from the log, agreed.
  if (mpi_.is_root()) {
    for (const auto& e : read_event_log(log_->path()).events)
      if (e["type"] == event::job_start) {
        job_start_ = e["t"].get<double>();
        break;
      }
    if (job_start_ == 0) job_start_ = wall_now();
  }
  broadcast(mpi_, job_start_);
  // Rank 0's deadline for all (the environment need not reach every rank's node).
  double deadline = deadline_.value_or(0);
  broadcast(mpi_, deadline);
  deadline_ = deadline > 0 ? std::optional<double>(deadline) : std::nullopt;
  {
    // The checkpoint buffers live in host memory (two with --async-checkpoint): refuse, on every rank alike,
    // sizes that this host's ranks together cannot hold rather than die in the allocation.
    const std::uint64_t copies = o_.async_checkpoint ? 2 : 1;
    const std::uint64_t available = read_host_info().memory_available_bytes;
    const std::uint64_t need = bytes * copies * static_cast<std::uint64_t>(std::max(mpi_.local_size(), 1));
    int too_big = available > 0 && need > available / 10 * 9 ? 1 : 0;
    too_big = allreduce(mpi_, too_big, RankReduce::max);
    if (too_big)
      throw usage_error(fmt::format(
          "{}: {} rank(s) per host x {} checkpoint buffer(s) of {} exceed 90% of the host's available memory",
          o_.state_bytes > state.bytes()
              ? fmt::format("invalid --state-bytes {}", format_bytes(o_.state_bytes))
              : std::string("checkpoint state too large"),
          mpi_.local_size(), copies, format_bytes(bytes)));
  }
  buffer_.assign(bytes, std::byte{0});
  if (bytes > state.bytes()) {
    // --state-bytes beyond the model's state: seeded filler, written and verified like real state.
    fill_random_host(buffer_.data() + state.bytes(), (bytes - state.bytes()) / 4, DType::fp32,
                     derive_seed(o_.seed, static_cast<std::uint64_t>(mpi_.rank())));
  }
  // Async saves snapshot into a second host buffer (with the same filler), lent to the writer thread while
  // it writes and handed back after: no allocation and no copy beyond the snapshot on the blocking path.
  if (o_.async_checkpoint) spare_ = buffer_;
  if (o_.resume) {
    const double t0 = wall_now();
    if (mpi_.is_root()) log(make_event(event::ckpt_restore_start, t0));
    // Walk back through every verified checkpoint before starting from scratch: rank 0 picks the newest
    // that verifies; if any rank then fails to read its shard (damaged since), all agree to try the next
    // older one.
    std::int64_t chosen = -1;
    ResumeChoice choice;  // rank 0: everything skipped, over all rounds
    std::optional<std::int64_t> below;
    std::uint64_t read_bytes = 0;
    while (true) {
      if (mpi_.is_root()) {
        auto round = store_.find_newest_valid(mpi_.size(), below);
        choice.skipped.insert(choice.skipped.end(), round.skipped.begin(), round.skipped.end());
        chosen = round.chosen ? round.chosen->step : -1;
      }
      broadcast(mpi_, chosen);
      if (chosen < 0) break;
      checkpoint_test_pause(CheckpointPhase::restore, chosen, mpi_.rank());
      std::string why;
      std::optional<CheckpointInfo> info;
      try {
        info = store_.verify(chosen, mpi_.size(), &why);  // each rank reads the manifest and its own shard
        if (info) store_.read_shard(*info, mpi_.rank(), buffer_);
      } catch (const Error& ex) {
        why = ex.what();
        info.reset();
      }
      int ok = info ? 1 : 0;
      ok = allreduce(mpi_, ok, RankReduce::min);
      if (ok == 1) {
        state.restore(std::span<const std::byte>(buffer_.data(), state.bytes()));
        read_bytes = info->total_bytes;
        restored_step_ = chosen;
        break;
      }
      if (mpi_.is_root())
        choice.skipped.push_back(
            {CheckpointStore::name_for(chosen), info ? "failed to verify on another rank during the restore"
                                                     : "failed to verify during the restore: " + why});
      below = chosen;
    }
    mpi_.barrier();
    if (mpi_.is_root()) {
      auto e = make_event(event::ckpt_restore_end);
      e["t_start"] = t0;
      e["step"] = std::max<std::int64_t>(chosen, 0);
      e["checkpoint"] =
          chosen >= 0 ? nlohmann::json(CheckpointStore::name_for(chosen)) : nlohmann::json(nullptr);
      e["bytes"] = read_bytes;
      e["seconds"] = wall_now() - t0;
      auto skipped = nlohmann::json::array();
      for (const auto& s : choice.skipped)
        skipped.push_back({{"checkpoint", s.checkpoint}, {"reason", s.reason}});
      e["skipped"] = skipped;
      log(e, Durability::fsync);
      for (const auto& s : choice.skipped) log::warn("checkpoint {} skipped: {}", s.checkpoint, s.reason);
    }
  }
  last_save_step_ = restored_step_;
  last_save_time_ = wall_now();
  if (!o_.checkpoint_interval.empty() && o_.checkpoint_interval != "auto")
    interval_s_ = parse_duration(o_.checkpoint_interval, "--checkpoint-interval");
  if (o_.checkpoint_interval == "auto") {
    // A relaunch reuses the save cost an earlier attempt measured (its ckpt_interval event) instead of
    // saving again right after the restore to measure it.
    double cost = 0;
    if (mpi_.is_root())
      for (const auto& e : read_event_log(log_->path()).events)
        if (e["type"] == event::ckpt_interval && e.value("policy", "") == "daly")
          cost = e.value("save_cost_s", 0.0);
    broadcast(mpi_, cost);
    if (cost > 0) {
      interval_cost_s_ = cost;
      interval_s_ = daly_interval(cost, o_.mtbf_s);
    }
  }
  heartbeat(restored_step_, restored_step_);
  last_progress_ = wall_now();
  watchdog_ = std::thread([this] { watchdog_loop(); });
  return restored_step_;
}

void TrainResilienceHooks::inject(const PlannedFault& f, std::int64_t step) {
  fired_->mark(f);  // durable before the fault acts: it fires once, even if this step runs again
  auto e = make_event(event::fault_injected);
  e["kind"] = std::string(to_string(f.kind));
  e["rank"] = mpi_.rank();
  e["slot"] = slot_;
  e["step"] = step;
  e["spec"] = f.text;
  switch (f.kind) {
    case FaultKind::crash:
      log(e, Durability::fsync);
      ::kill(::getpid(), SIGKILL);
      break;
    case FaultKind::hang:
      log(e, Durability::fsync);
      heartbeat(step - 1, step - 1);
      while (true) std::this_thread::sleep_for(std::chrono::seconds(1));  // stuck before its collective
    case FaultKind::straggler:
      straggler_factor_ = f.factor;
      straggler_until_ = f.duration_s > 0 ? wall_now() + f.duration_s : 1e300;
      e["factor"] = f.factor;
      e["duration_s"] = f.duration_s;
      log(e);
      break;
    case FaultKind::sdc: {
      SplitMix64 rng(derive_seed(o_.seed, static_cast<std::uint64_t>(f.id) + 1000));
      const auto bit = rng.next();
      state_->flip_bit(bit);
      e["bit"] = bit;
      log(e);
      break;
    }
    case FaultKind::nan:
      state_->poison_next_loss();
      log(e);
      break;
    case FaultKind::ckpt_write_fail:
      write_fail_pending_ = true;
      log(e);
      break;
    case FaultKind::ckpt_corrupt:
      break;  // acts in after_step, once this step's checkpoint is committed
  }
}

void TrainResilienceHooks::before_step(std::int64_t step) {
  const double now = wall_now();
  for (const auto& f : plan_.faults) {
    if (f.rank != slot_) continue;
    if (f.time_s && *f.time_s < slot_since_s_) continue;  // hit the slot before it was in service
    const bool due = f.step ? step >= *f.step : now - job_start_ >= *f.time_s;
    // Due first: a random plan holds thousands of future faults, the fired record only the past ones.
    if (!due || fired_->fired(f)) continue;
    if (f.kind == FaultKind::ckpt_corrupt) {
      if (std::none_of(corrupt_pending_.begin(), corrupt_pending_.end(),
                       [&](auto& p) { return p.id == f.id; }))
        corrupt_pending_.push_back(f);
      continue;
    }
    inject(f, step);
  }
  injected_sleep_ = 0;
  if (straggler_factor_ > 1 && now < straggler_until_ && !own_compute_.empty()) {
    // A slow GPU: this rank's compute takes `factor` times as long.
    injected_sleep_ = (straggler_factor_ - 1) * summarize(own_compute_).median;
    sleep_s(injected_sleep_);
  }
  heartbeat(step, step - 1);
  step_start_ = now;
}

bool TrainResilienceHooks::after_step(std::int64_t step, const workloads::StepOutcome& out) {
  const double now = wall_now();
  heartbeat(step, step);
  if (injected_sleep_ == 0) own_compute_.push_back(out.compute_seconds);
  if (own_compute_.size() > 50) own_compute_.erase(own_compute_.begin());
  window_compute_ += out.compute_seconds + injected_sleep_;
  step_times_.push_back(out.slowest_rank_seconds);
  if (step_times_.size() > 50) step_times_.erase(step_times_.begin());
  median_step_ = summarize(step_times_).median;
  if (mpi_.is_root()) {
    auto e = make_event(event::step, now);
    e["step"] = step;
    e["t_start"] = step_start_;
    e["seconds"] = out.seconds;
    e["slowest_s"] = out.slowest_rank_seconds;
    e["loss"] = std::isfinite(out.loss) ? nlohmann::json(out.loss) : nlohmann::json(nullptr);
    log(e);
  }
  // NaN check on the agreed loss and gradient norm (identical on every rank, so every rank stops alike);
  // each rank's own pre-reduction flag names where the NaN came from.
  if (!std::isfinite(out.loss) || !std::isfinite(out.grad_norm)) {
    const int origin = nan_origin(out.local_finite);
    if (mpi_.is_root()) {
      auto e = make_event(event::failure_detected);
      e["kind"] = "nan";
      e["rank"] = origin;
      e["step"] = step;
      e["how"] = origin >= 0 ? fmt::format(
                                   "loss/gradient norm not finite after the all-reduce; rank {}'s own loss/"
                                   "gradient norm was already not finite before it",
                                   origin)
                             : std::string(
                                   "loss/gradient norm not finite after the all-reduce; every rank's "
                                   "own values were finite (origin rank not identifiable)");
      log(e, Durability::fsync);
    }
    rollback_ = true;
    return false;
  }
  const bool periodic = step % o_.check_every == 0;
  const bool save = checkpoint_due(step, out.slowest_rank_seconds);
  if ((periodic || save) && vote_sdc(step)) {
    rollback_ = true;
    return false;
  }
  if (periodic) check_stragglers(step);
  if (async_.pending()) poll_async(false);
  if (save) save_checkpoint(step);
  for (auto it = corrupt_pending_.begin(); it != corrupt_pending_.end();) {
    corrupt_newest_checkpoint(*it, step);
    it = corrupt_pending_.erase(it);
  }
  last_progress_ = wall_now();
  any_step_ = true;
  if (deadline_reached()) {
    deadline_stop_ = true;
    return false;
  }
  return true;
}

int TrainResilienceHooks::nan_origin(bool local_finite) {
  const int mine = local_finite ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(mpi_.size()));
  all = allgather(mpi_, mine);
  const auto it = std::find(all.begin(), all.end(), 0);
  return it == all.end() ? -1 : static_cast<int>(it - all.begin());
}

bool TrainResilienceHooks::deadline_reached() {
  if (!deadline_) return false;
  int stop = mpi_.is_root() && wall_now() >= *deadline_ ? 1 : 0;  // rank 0's clock decides for all
  broadcast(mpi_, stop);
  return stop == 1;
}

void TrainResilienceHooks::on_finish(std::int64_t last_step) {
  if (async_.pending()) poll_async(true);
  stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (mpi_.is_root()) {
    auto e = make_event(event::attempt_end);
    e["last_step"] = last_step;
    e["reason"] = rollback_ ? "rollback" : deadline_stop_ ? "time budget" : "completed";
    log(e, Durability::fsync);
    if (!std::getenv("FB_SUPERVISED") && !rollback_ && !deadline_stop_)
      log(make_event(event::job_end), Durability::fsync);
  }
}

bool TrainResilienceHooks::checkpoint_due(std::int64_t step, double step_s) {
  if (o_.checkpoint_every > 0) return step % o_.checkpoint_every == 0;
  if (o_.checkpoint_interval.empty()) return false;
  if (o_.checkpoint_interval == "auto" && !interval_s_) {
    // The first save measures its cost; the interval follows from Daly's formula (set after that save).
    return step == restored_step_ + 1;
  }
  if (interval_steps_ == 0 && interval_s_) {
    // Time interval → steps, from the agreed (slowest-rank) step time, so every rank decides alike.
    interval_steps_ = std::max<std::int64_t>(1, std::llround(*interval_s_ / std::max(step_s, 1e-9)));
    if (mpi_.is_root()) {
      auto e = make_event(event::ckpt_interval);
      e["step"] = step;
      e["policy"] = o_.checkpoint_interval == "auto" ? "daly" : "fixed";
      e["interval_s"] = *interval_s_;
      e["interval_steps"] = interval_steps_;
      e["step_s"] = step_s;
      if (o_.checkpoint_interval == "auto") {
        e["save_cost_s"] = interval_cost_s_;
        e["mtbf_s"] = o_.mtbf_s;
      }
      log(e);
      log::info("checkpoint interval ({}): {:.3f} s = every {} step(s) at {:.4f} s per step",
                o_.checkpoint_interval == "auto" ? "Daly" : "fixed", *interval_s_, interval_steps_, step_s);
    }
  }
  return interval_steps_ > 0 && step - last_save_step_ >= interval_steps_;
}

void TrainResilienceHooks::commit_gathered(std::int64_t step, const ShardInfo& mine, double write_s_local) {
  // Every rank's shard is durable once this gather completes: rank 0 may commit.
  const std::uint64_t local[2] = {mine.bytes, mine.xxh64};
  const auto all = gather_to_root(mpi_, std::span<const std::uint64_t>(local));
  const double write_s = allreduce(mpi_, write_s_local, RankReduce::max);
  // No rank moves on before rank 0 committed and pruned: a ckpt-corrupt fault on another rank right after
  // this save must find this checkpoint as the newest committed one, not the previous one.
  if (!mpi_.is_root()) {
    mpi_.barrier();
    return;
  }
  std::vector<ShardInfo> shards;
  for (int r = 0; r < mpi_.size(); ++r)
    shards.push_back({r, CheckpointStore::shard_file(r), all[2 * static_cast<std::size_t>(r)],
                      all[2 * static_cast<std::size_t>(r) + 1], 0});
  std::optional<CheckpointInfo> info;
  std::vector<std::string> pruned;
  std::string refused;
  try {
    info = store_.commit(step, shards);
    // Only now, with this checkpoint committed, may older ones go; prune keeps the --keep newest that
    // verify (this one included when it does).
    pruned = store_.prune(o_.keep, mpi_.size(), step);
  } catch (const Error& ex) {
    refused = ex.what();
  }
  mpi_.barrier();
  if (!info) {  // not fatal: the previous checkpoints stay, as after a failed shard write
    auto e = make_event(event::failure_detected);
    e["kind"] = "ckpt-write-fail";
    e["rank"] = 0;
    e["step"] = step;
    e["fatal"] = false;
    e["how"] = "commit refused: " + refused;
    log(e, Durability::fsync);
    return;
  }
  auto e = make_event(event::ckpt_commit);
  e["step"] = step;
  e["checkpoint"] = info->name;
  e["bytes"] = info->total_bytes;
  e["write_s"] = write_s;
  e["pruned"] = pruned;
  log(e, Durability::fsync);
}

void TrainResilienceHooks::save_checkpoint(std::int64_t step) {
  if (async_.pending()) poll_async(true);  // one save in flight at a time
  const double t0 = wall_now();
  if (mpi_.is_root()) {
    auto e = make_event(event::ckpt_save_start, t0);
    e["step"] = step;
    log(e);
  }
  ShardWriteOptions wopt;
  if (write_fail_pending_) {
    wopt.fail_after_bytes = buffer_.size() / 2;
    write_fail_pending_ = false;
  }
  std::string error;
  ShardInfo mine;
  if (o_.async_checkpoint) {
    // The blocking part: the snapshot into the host buffer (device to host on a GPU) and the hand-off.
    state_->snapshot(std::span<std::byte>(spare_.data(), state_->bytes()));
    checkpoint_test_pause(CheckpointPhase::snapshot, step, mpi_.rank());
    async_.start(store_, step, mpi_.rank(), std::move(spare_), wopt);
    async_started_ = t0;
  } else {
    state_->snapshot(std::span<std::byte>(buffer_.data(), state_->bytes()));
    checkpoint_test_pause(CheckpointPhase::snapshot, step, mpi_.rank());
    try {
      mine = store_.write_shard(step, mpi_.rank(), buffer_, wopt);
    } catch (const Error& ex) {
      error = ex.what();
    }
  }
  int ok = error.empty() ? 1 : 0;
  std::vector<int> oks(static_cast<std::size_t>(mpi_.size()));
  oks = allgather(mpi_, ok);
  const bool all_ok = std::all_of(oks.begin(), oks.end(), [](int v) { return v == 1; });
  if (!o_.async_checkpoint && all_ok) commit_gathered(step, mine, mine.write_s);
  if (!all_ok) report_write_failure(step, oks, error);
  last_save_step_ = step;
  last_save_time_ = wall_now();
  const double blocking = last_save_time_ - t0;
  if (mpi_.is_root()) {
    auto e = make_event(event::ckpt_save_end, last_save_time_);
    e["step"] = step;
    e["t_start"] = t0;
    e["ok"] = all_ok;
    e["async"] = o_.async_checkpoint;
    e["bytes"] = static_cast<std::uint64_t>(buffer_.size()) * static_cast<std::uint64_t>(mpi_.size());
    e["seconds"] = blocking;
    log(e);
  }
  if (o_.checkpoint_interval == "auto" && !interval_s_) {
    double cost = blocking;  // agreed: every rank measured the same collective save
    cost = allreduce(mpi_, cost, RankReduce::max);
    interval_cost_s_ = std::max(cost, 1e-6);
    interval_s_ = daly_interval(interval_cost_s_, o_.mtbf_s);
  }
}

void TrainResilienceHooks::report_write_failure(std::int64_t step, const std::vector<int>& oks,
                                                const std::string& error) {
  // Not fatal: training goes on and the previous checkpoint stays the newest valid one.
  for (int r = 0; r < mpi_.size(); ++r) {
    if (oks[static_cast<std::size_t>(r)] == 1) continue;
    if (r == mpi_.rank()) {
      auto e = make_event(event::failure_detected);
      e["kind"] = "ckpt-write-fail";
      e["rank"] = r;
      e["step"] = step;
      e["fatal"] = false;
      e["how"] = "shard write error: " + error;
      log(e, Durability::fsync);
    }
  }
}

void TrainResilienceHooks::poll_async(bool wait) {
  int done = wait || async_.done() ? 1 : 0;
  done = allreduce(mpi_, done, RankReduce::min);
  if (!done) return;
  const auto step = async_.step();
  ShardInfo mine;
  std::string error;
  try {
    mine = async_.wait();
  } catch (const Error& ex) {
    error = ex.what();
  }
  spare_ = async_.take_buffer();  // back for the next snapshot
  int ok = error.empty() ? 1 : 0;
  std::vector<int> oks(static_cast<std::size_t>(mpi_.size()));
  oks = allgather(mpi_, ok);
  if (std::all_of(oks.begin(), oks.end(), [](int v) { return v == 1; }))
    commit_gathered(step, mine, mine.write_s);
  else
    report_write_failure(step, oks, error);
}

bool TrainResilienceHooks::vote_sdc(std::int64_t step) {
  const std::uint64_t mine = state_->replicated_checksum();
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(mpi_.size()));
  std::vector<int> groups(static_cast<std::size_t>(mpi_.size()));
  sums = allgather(mpi_, mine);
  groups = allgather(mpi_, replica_group_);
  const auto odd = sdc_outliers(sums, groups);
  const auto it = std::find(odd.begin(), odd.end(), true);
  if (it == odd.end()) return false;
  if (mpi_.is_root()) {
    auto e = make_event(event::failure_detected);
    e["kind"] = "sdc";
    e["rank"] = static_cast<int>(it - odd.begin());
    e["step"] = step;
    e["how"] = "replica checksum vote: the odd one out of its data-parallel group";
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

void TrainResilienceHooks::corrupt_newest_checkpoint(const PlannedFault& f, std::int64_t step) {
  const auto committed = store_.committed_steps();
  fired_->mark(f);
  auto e = make_event(event::fault_injected);
  e["kind"] = "ckpt-corrupt";
  e["rank"] = mpi_.rank();
  e["step"] = step;
  e["spec"] = f.text;
  if (committed.empty()) {
    e["note"] = "no committed checkpoint to corrupt";
    log(e);
    return;
  }
  const auto path = store_.dir_for(committed.back()) / CheckpointStore::shard_file(mpi_.rank());
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  std::uint64_t offset = 0;
  if (fd >= 0) {
    const off_t size = ::lseek(fd, 0, SEEK_END);
    offset = static_cast<std::uint64_t>(size / 2);
    unsigned char bytes[8] = {};
    if (::pread(fd, bytes, sizeof bytes, static_cast<off_t>(offset)) > 0) {
      for (auto& b : bytes) b ^= 0xA5;
      if (::pwrite(fd, bytes, sizeof bytes, static_cast<off_t>(offset)) > 0) ::fsync(fd);
    }
    ::close(fd);
  }
  e["checkpoint"] = CheckpointStore::name_for(committed.back());
  e["file"] = path.filename().string();
  e["offset"] = offset;
  log(e, Durability::fsync);
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
    const double limit = grace * hang_.timeout(median_step_.load(), any_step_.load());
    const double idle = wall_now() - last_progress_.load();
    if (idle < limit || stop_) continue;
    auto e = make_event(event::failure_detected);
    const int culprit = failing_rank_from_heartbeats();
    e["kind"] = "hang";
    e["rank"] = culprit;
    std::vector<std::string> diagnosis;
    try {
      publish_call_state(calls, identity, false);
      // A rank in a call for half the step timeout is stuck in it: the step it belongs to began after the
      // last completed step, and a step takes a fraction of the timeout.
      diagnosis = diagnose_hang(read_call_states(calls, mpi_.size()), limit / 2);
    } catch (...) {
    }
    e["calls"] = diagnosis;
    e["how"] = fmt::format(
        "watchdog on rank {}: no step completed in {:.1f} s (timeout {:.1f} s){}{}", mpi_.rank(), idle, limit,
        culprit >= 0 ? fmt::format("; rank {} has not entered the step the others wait in", culprit) : "",
        diagnosis.empty() ? "" : "; " + diagnosis.front());
    try {
      log(e, Durability::fsync);
    } catch (...) {
    }
    std::fflush(nullptr);
    std::_Exit(kWatchdogExit);  // the launcher tears the job down; the supervisor restarts it
  }
}

}  // namespace fb::resilience
