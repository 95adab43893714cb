// Checkpointing in the training hooks: the host buffers, the restore at start (walking back through the
// verified checkpoints), the interval (fixed or Daly's), and the save, gather and commit of every rank's
// shard (blocking or async).
#include <algorithm>
#include <cmath>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/system_info.hpp"
#include "core/units.hpp"
#include "resilience/checkpoint_interval.hpp"
#include "resilience/checkpoint_space.hpp"
#include "resilience/checkpoint_test_hook.hpp"
#include "resilience/train_resilience_hooks.hpp"

namespace fb::resilience {

void TrainResilienceHooks::allocate_checkpoint_buffers(const workloads::TrainStateAccess& state) {
  const std::uint64_t bytes = std::max<std::uint64_t>(state.bytes(), o_.state_bytes);
  // A shard holds at least the state a restore needs: a smaller --state-bytes is raised to it, and said.
  if (o_.state_bytes > 0 && o_.state_bytes < state.bytes() && mpi_.is_root())
    log::warn("--state-bytes {} is below this rank's model state ({}): each shard holds the state, {}",
              format_bytes(o_.state_bytes), format_bytes(state.bytes()), format_bytes(bytes));
  // The checkpoint buffers live in host memory (two with --async-checkpoint): refuse, on every rank alike,
  // sizes that this host's ranks together cannot hold rather than die in the allocation.
  const std::uint64_t copies = o_.async_checkpoint ? 2 : 1;
  const std::uint64_t available = read_host_info().memory_available_bytes;
  const std::uint64_t need = bytes * copies * static_cast<std::uint64_t>(std::max(mpi_.local_size(), 1));
  int too_big = available > 0 && need > available / 10 * 9 ? 1 : 0;
  too_big = allreduce(mpi_, too_big, RankReduce::max);
  if (too_big)
    throw usage_error(fmt::format(
        "{}: {} rank(s) on this host x {} checkpoint buffer(s) of {} exceed 90% of the host's available "
        "memory",
        o_.state_bytes > state.bytes() ? fmt::format("invalid --state-bytes {}", format_bytes(o_.state_bytes))
                                       : std::string("checkpoint state too large"),
        mpi_.local_size(), copies, format_bytes(bytes)));
  // The run dir's volume against the checkpoints kept, now that the shard size is known (the command checks
  // --state-bytes before launching; without it, or with a model state above it, only here). A full disk
  // would otherwise fail most saves while the run goes on.
  if (o_.checkpoint_every > 0 || !o_.checkpoint_interval.empty()) {
    const double every_shard =
        static_cast<double>(allreduce(mpi_, static_cast<double>(bytes), RankReduce::sum));
    std::string problem;
    if (mpi_.is_root())
      problem = checkpoint_space_problem(o_.run_dir, o_.keep, every_shard,
                                         fmt::format("of {} rank(s), {} each", mpi_.size(),
                                                     format_bytes(static_cast<std::uint64_t>(every_shard))))
                    .value_or("");
    if (allreduce(mpi_, problem.empty() ? 0 : 1, RankReduce::max))
      throw usage_error(fmt::format("the run dir cannot hold the checkpoints: {}{}", problem,
                                    mpi_.is_root() ? "" : " (see rank 0)"));
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
}

void TrainResilienceHooks::restore_newest_checkpoint(workloads::TrainStateAccess& state) {
  // A checkpoint of another job (a mistyped --layers or --tp on a resume) is refused, not walked past: the
  // run would start over and its saves would prune that job's verified checkpoints.
  agree_on_errors(mpi_, [&] {
    if (const auto why =
            store_.written_by_another_job(mpi_.size(), mpi_.rank(), buffer_.size(), state.bytes()))
      throw usage_error(fmt::format(
          "--resume: {} (a different --model, --layers, parallel layout, --dtype, --distributed-optimizer or "
          "--state-bytes): resume with the "
          "options that wrote {}, or use another --run-dir",
          *why, store_.root().string()));
  });
  const double t0 = wall_now();
  if (mpi_.is_root()) log(make_event(event::ckpt_restore_start, t0));
  // Walk back through every verified checkpoint before starting from scratch: rank 0 picks the newest whose
  // manifest verifies, each rank reads and hashes its own shard of it, and if any rank fails (a damaged or
  // missing shard), all agree to try the next older one. No rank reads another's shard: the restore takes
  // one shard's time at any world size.
  std::int64_t chosen = -1;
  ResumeChoice choice;  // rank 0: everything skipped, over all rounds
  std::optional<std::int64_t> below;
  std::uint64_t read_bytes = 0;
  while (true) {
    if (mpi_.is_root()) {
      auto round = store_.find_newest_valid(mpi_.size(), below, CheckpointStore::Check::manifest);
      choice.skipped.insert(choice.skipped.end(), round.skipped.begin(), round.skipped.end());
      chosen = round.chosen ? round.chosen->step : -1;
    }
    broadcast(mpi_, chosen);
    if (chosen < 0) break;
    checkpoint_test_pause(CheckpointPhase::restore, chosen, mpi_.rank());
    std::string why;
    std::optional<CheckpointInfo> info;
    try {
      info = store_.verify_manifest(chosen, mpi_.size(), &why);
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
    // Each rank checked its own shard: rank 0 lists the first failing rank's reason (it names the shard).
    const auto reasons = gather_to_root(mpi_, info ? std::string() : why);
    if (mpi_.is_root()) {
      const auto failed =
          std::find_if(reasons.begin(), reasons.end(), [](const auto& r) { return !r.empty(); });
      const std::string reason = failed == reasons.end()
                                     ? std::string("a rank could not read its shard")
                                     : fmt::format("rank {}: {}", failed - reasons.begin(), *failed);
      choice.skipped.push_back(
          {CheckpointStore::name_for(chosen), "failed to verify during the restore: " + reason});
    }
    below = chosen;
  }
  mpi_.barrier();
  log_restore_end(t0, chosen, read_bytes, choice);
}

void TrainResilienceHooks::log_restore_end(double t0, std::int64_t chosen, std::uint64_t read_bytes,
                                           const ResumeChoice& choice) {
  if (!mpi_.is_root()) return;
  auto e = make_event(event::ckpt_restore_end);
  e["t_start"] = t0;
  e["step"] = std::max<std::int64_t>(chosen, 0);
  e["checkpoint"] = chosen >= 0 ? nlohmann::json(CheckpointStore::name_for(chosen)) : nlohmann::json(nullptr);
  e["bytes"] = read_bytes;
  e["seconds"] = wall_now() - t0;
  auto skipped = nlohmann::json::array();
  for (const auto& s : choice.skipped)
    skipped.push_back({{"checkpoint", s.checkpoint}, {"reason", s.reason}});
  e["skipped"] = skipped;
  log(e, Durability::fsync);
  for (const auto& s : choice.skipped) log::warn("checkpoint {} skipped: {}", s.checkpoint, s.reason);
  // Said either way: a mistyped --run-dir resumes nothing, and the run starts over without another sign.
  if (chosen >= 0)
    log::info("--resume: restored {} (a checkpoint of {}, read in {:.2f} s)",
              CheckpointStore::name_for(chosen), format_bytes(read_bytes), wall_now() - t0);
  else
    log::info("--resume: no checkpoint {}in {}; training from step 0",
              choice.skipped.empty() ? "" : "verifies ", store_.root().string());
}

void TrainResilienceHooks::resolve_checkpoint_interval() {
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
}

bool TrainResilienceHooks::checkpoint_due(std::int64_t step, double step_s) {
  if (o_.checkpoint_every > 0) {
    // Logged once per attempt as the other policies are, with its length in time at the agreed step time,
    // so the report's interval (ledger.checkpoints.interval_*, ckpt_interval_s) is never blank.
    if (interval_steps_ == 0) {
      interval_steps_ = o_.checkpoint_every;
      if (mpi_.is_root()) {
        auto e = make_event(event::ckpt_interval);
        e["step"] = step;
        e["policy"] = "steps";
        e["interval_s"] = static_cast<double>(o_.checkpoint_every) * step_s;
        e["interval_steps"] = o_.checkpoint_every;
        e["step_s"] = step_s;
        log(e);
      }
    }
    return step % o_.checkpoint_every == 0;
  }
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

// The --keep newest committed checkpoints older than `step` that verify on every rank, ascending: each rank
// hashes its own shard of each (remembered while unchanged, so mostly once), and the ranks agree on each.
// Checked newest first, --keep at a time, until --keep verify or none are left.
std::vector<std::int64_t> TrainResilienceHooks::verified_older_checkpoints(std::int64_t step) {
  std::vector<std::int64_t> candidates;
  if (mpi_.is_root()) {
    candidates = store_.committed_steps();
    std::erase_if(candidates, [&](std::int64_t s) { return s >= step; });
    std::reverse(candidates.begin(), candidates.end());
  }
  std::uint64_t n = candidates.size();
  broadcast(mpi_, n);
  candidates.resize(n);
  broadcast(mpi_, std::span<std::int64_t>(candidates));
  const auto keep = static_cast<std::size_t>(std::max(o_.keep, 0));
  std::vector<std::int64_t> verified;
  for (std::size_t next = 0; verified.size() < keep && next < candidates.size();) {
    const std::size_t take = std::min(keep - verified.size(), candidates.size() - next);
    std::vector<int> ok(take);
    for (std::size_t i = 0; i < take; ++i)
      ok[i] = store_.verify_rank(candidates[next + i], mpi_.size(), mpi_.rank(), nullptr) ? 1 : 0;
    allreduce(mpi_, std::span<int>(ok), RankReduce::min);
    for (std::size_t i = 0; i < take; ++i)
      if (ok[i] == 1) verified.push_back(candidates[next + i]);
    next += take;
  }
  std::reverse(verified.begin(), verified.end());
  return verified;
}

void TrainResilienceHooks::commit_gathered(std::int64_t step, const ShardInfo& mine, double write_s_local) {
  // Every rank's shard is durable once this gather completes: rank 0 may commit.
  const std::uint64_t local[3] = {mine.bytes, mine.xxh64, state_->bytes()};
  const auto all = gather_to_root(mpi_, std::span<const std::uint64_t>(local));
  const double write_s = allreduce(mpi_, write_s_local, RankReduce::max);
  std::optional<CheckpointInfo> info;
  std::vector<std::string> pruned, prune_failed;
  std::string refused;
  if (mpi_.is_root()) {
    std::vector<ShardInfo> shards;
    for (int r = 0; r < mpi_.size(); ++r)
      shards.push_back({r, CheckpointStore::shard_file(r), all[3 * static_cast<std::size_t>(r)],
                        all[3 * static_cast<std::size_t>(r) + 1], 0,
                        all[3 * static_cast<std::size_t>(r) + 2]});
    try {
      info = store_.commit(step, shards);
    } catch (const Error& ex) {
      refused = ex.what();
    }
  }
  int committed = info ? 1 : 0;
  broadcast(mpi_, committed);
  // Only now, with this checkpoint committed, may older ones go; the --keep newest older ones that verify
  // on every rank stay beside it (it counts once it has been read back, at the next commit).
  if (committed == 1) {
    const auto kept = verified_older_checkpoints(step);
    if (mpi_.is_root()) {
      try {
        pruned = store_.prune_verified(o_.keep, step, kept, &prune_failed);
      } catch (const Error& ex) {
        prune_failed.push_back(ex.what());
      }
    }
  }
  // No rank moves on before rank 0 committed and pruned: a ckpt-corrupt fault on another rank right after
  // this save must find this checkpoint as the newest committed one, not the previous one.
  mpi_.barrier();
  if (committed == 0) discard_unsaved(step, true);
  if (!mpi_.is_root()) return;
  if (!info) {  // not fatal: the previous checkpoints stay, as after a failed shard write
    log::warn(
        "checkpoint of step {} not saved: its commit was refused ({}); the previous checkpoint stays the "
        "newest",
        step, refused);
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
  if (!prune_failed.empty()) e["prune_failed"] = prune_failed;
  log(e, Durability::fsync);
  for (const auto& f : prune_failed)
    if (prune_warned_.insert(f.substr(0, f.find(':'))).second)
      log::warn("--keep {}: an older checkpoint could not be removed, and its space stays in use: {}",
                o_.keep, f);
}

void TrainResilienceHooks::saving(bool begin) {
  const double now = wall_now();
  if (begin) {
    saving_since_ = now;
    return;
  }
  if (const double since = saving_since_.exchange(-1); since >= 0)
    longest_save_s_ = std::max(longest_save_s_.load(), now - since);
  last_progress_ = now;  // the save's time is not a step's
}

void TrainResilienceHooks::save_checkpoint(std::int64_t step) {
  saving(true);
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
  saving(false);
}

void TrainResilienceHooks::report_write_failure(std::int64_t step, const std::vector<int>& oks,
                                                const std::string& error) {
  // Not fatal: training goes on and the previous checkpoint stays the newest valid one.
  if (mpi_.is_root()) {
    std::string failed;
    for (int r = 0; r < mpi_.size(); ++r)
      if (oks[static_cast<std::size_t>(r)] != 1) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    log::warn(
        "checkpoint of step {} not saved: the shard write failed on rank(s) {}{}; the previous checkpoint "
        "stays the newest",
        step, failed, error.empty() ? "" : " (rank 0: " + error + ")");
  }
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
  discard_unsaved(step, oks[static_cast<std::size_t>(mpi_.rank())] == 1);
}

// A save that did not commit leaves no shard behind: each rank removes the shard it wrote (never one it did
// not write: a failed write leaves what was at that name), then rank 0 the step's directory if nothing else
// is in it (fs::remove takes only an empty one). Their space stayed taken until a later commit pruned them,
// and the start-up check counted it as free: a resumed run on a full volume then failed every save.
void TrainResilienceHooks::discard_unsaved(std::int64_t step, bool wrote_mine) {
  std::error_code ec;
  if (wrote_mine)
    std::filesystem::remove(store_.dir_for(step) / CheckpointStore::shard_file(mpi_.rank()), ec);
  mpi_.barrier();
  if (mpi_.is_root()) std::filesystem::remove(store_.dir_for(step), ec);
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

}  // namespace fb::resilience
