#include "resilience/train_resilience_hooks.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/random_fill.hpp"
#include "core/rank_collectives.hpp"
#include "core/statistics.hpp"
#include "core/units.hpp"

namespace fb::resilience {
namespace fs = std::filesystem;
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

void sleep_s(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace

void validate_resilience_options(const ResilienceOptions& o) {
  // Values first, with or without --run-dir: a typo is named even where the option would not act.
  if (o.checkpoint_every < 0)
    throw usage_error(fmt::format("invalid --checkpoint-every {}: must not be negative", o.checkpoint_every));
  if (o.keep < 1) throw usage_error(fmt::format("invalid --keep {}: must be at least 1", o.keep));
  if (!(o.straggler_threshold > 0 && o.straggler_threshold <= 1))
    throw usage_error(
        fmt::format("invalid --straggler-threshold {}: must be in (0, 1]", o.straggler_threshold));
  if (o.check_every < 1)
    throw usage_error(fmt::format("invalid --check-every {}: must be at least 1", o.check_every));
  parse_hang_timeout(o.hang_timeout);
  // An option that would not act is refused, not ignored: a run that looks checked or checkpointed, and
  // is not. (Set means "not the default": the value given cannot be told from the default typed out.)
  const ResilienceOptions d;
  if (o.run_dir.empty()) {
    for (const auto& [set, name] : {std::pair{o.checkpoint_every > 0, "--checkpoint-every"},
                                    {!o.checkpoint_interval.empty(), "--checkpoint-interval"},
                                    {o.resume, "--resume"},
                                    {!o.faults.empty(), "--faults"},
                                    {o.async_checkpoint, "--async-checkpoint"},
                                    {o.keep != d.keep, "--keep"},
                                    {o.state_bytes > 0, "--state-bytes"},
                                    {o.mtbf_s > 0, "--mtbf"},
                                    {o.hang_timeout != d.hang_timeout, "--hang-timeout"},
                                    {o.straggler_threshold != d.straggler_threshold, "--straggler-threshold"},
                                    {o.check_every != d.check_every, "--check-every"}})
      if (set) throw usage_error(fmt::format("{} needs --run-dir DIR", name));
    return;
  }
  if (o.checkpoint_every > 0 && !o.checkpoint_interval.empty())
    throw usage_error("--checkpoint-every and --checkpoint-interval are exclusive");
  if (o.checkpoint_every == 0 && o.checkpoint_interval.empty())
    for (const auto& [set, name] :
         {std::pair{o.async_checkpoint, "--async-checkpoint"},
          {o.keep != d.keep, "--keep"},
          {o.state_bytes > 0 && !o.resume, "--state-bytes"}})  // a resume reads shards of that size
      if (set)
        throw usage_error(fmt::format(
            "{} acts on checkpoints: add --checkpoint-every N or --checkpoint-interval DURATION|auto", name));
  if (o.mtbf_s > 0 && o.checkpoint_interval != "auto")
    throw usage_error("--mtbf sets Daly's interval: it acts with --checkpoint-interval auto only");
  if (o.checkpoint_interval == "auto") {
    if (!(o.mtbf_s > 0))
      throw usage_error("--checkpoint-interval auto needs --mtbf DURATION (Daly's interval)");
  } else if (!o.checkpoint_interval.empty() &&
             !(parse_duration(o.checkpoint_interval, "--checkpoint-interval") > 0)) {
    throw usage_error(
        fmt::format("invalid --checkpoint-interval '{}': must be positive", o.checkpoint_interval));
  }
}

FaultPlan job_fault_plan(const ResilienceOptions& o, int world_size) {
  if (o.faults.empty()) return {};
  const int spares = std::max(0, env_int("FB_SPARES", 0));
  return load_fault_plan(o.faults, world_size + spares, 7 * 86400.0, o.seed, spares);
}

TrainResilienceHooks::TrainResilienceHooks(ResilienceOptions options, MpiContext& mpi, int replica_group,
                                           FaultPlan plan)
    : o_(std::move(options)),
      mpi_(mpi),
      replica_group_(replica_group),
      slot_(mpi.rank()),
      attempt_(env_int("FB_ATTEMPT", 1)),
      dir_(o_.run_dir),
      lock_(dir_, mpi),
      store_(dir_ / "checkpoints"),
      plan_(std::move(plan)),
      hang_(parse_hang_timeout(o_.hang_timeout)) {
  const double created = wall_now();
  store_.set_job(o_.job);
  std::error_code ec;
  fs::create_directories(dir_ / "heartbeat", ec);
  fs::create_directories(dir_ / "calls", ec);
  // The checkpoint directory is made now, not at the first save: a file in its place (or no permission)
  // would otherwise turn every save into a warning and the run into one that exits 0 with nothing saved.
  agree_on_errors(mpi_, [&] {
    if (!mpi_.is_root()) return;
    const auto dir = dir_ / "checkpoints";
    std::error_code made;
    fs::create_directories(dir, made);
    std::string why;
    if (made || !fs::is_directory(dir, made))
      why = made ? made.message() : std::string("not a directory");
    else if (::access(dir.c_str(), W_OK | X_OK) != 0)
      why = std::strerror(errno);
    if (!why.empty())
      throw usage_error(
          fmt::format("--run-dir {}: cannot hold checkpoints in {}: {}", dir_.string(), dir.string(), why));
  });
  log_ = std::make_unique<EventLog>(dir_ / "events.jsonl");
  // Placement written by the supervisor: rank → slot (a spare replaces a drained rank). Every rank reads it
  // and checks every slot, so all reach the same verdict (one rank stopping alone would leave the others
  // waiting in the next collective).
  agree_on_errors(mpi_, [&] {
    const auto path = dir_ / "placement.json";
    std::error_code exists;
    if (!fs::exists(path, exists)) return;
    const auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
    const auto r = static_cast<std::size_t>(mpi.rank());
    if (j.is_object() && j.contains("slots") && j["slots"].is_array()) {
      const auto& slots = j["slots"];
      for (std::size_t i = 0; i < slots.size(); ++i)
        if (!slots[i].is_number_integer() || slots[i].get<std::int64_t>() < 0 ||
            slots[i].get<std::int64_t>() > std::numeric_limits<int>::max())
          throw input_error(fmt::format("{}: slots[{}] is not a slot number (the supervisor writes them)",
                                        path.string(), i));
      if (r < slots.size()) slot_ = slots[r].get<int>();
    }
    if (j.is_object() && j.contains("since_s") && j["since_s"].is_array() && r < j["since_s"].size() &&
        j["since_s"][r].is_number())
      slot_since_s_ = j["since_s"][r].get<double>();
  });
  if (const char* d = std::getenv("FB_DEADLINE"); d && *d) deadline_ = std::atof(d);
  if (const char* d = std::getenv("FB_DRAIN_WATCH"); d && std::string(d) == "1") drain_watch_ = true;
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

std::int64_t TrainResilienceHooks::on_start(workloads::TrainStateAccess& state) {
  state_ = &state;
  if (mpi_.is_root()) log(make_event(event::init_done), Durability::fsync);
  agree_job_start_and_deadline();
  resume_straggler();
  allocate_checkpoint_buffers(state);
  // The watchdog runs before the restore: a rank stuck reading its shard (a stalled file system, a stopped
  // peer) is a hang like any other, given the checkpoint allowance, not a job that waits forever.
  last_progress_ = wall_now();
  watchdog_ = std::thread([this] { watchdog_loop(); });
  if (o_.resume) {
    // A restore may read a large shard (and walk back over several): its allowance assumes no less than
    // 50 MB/s, so only a stalled read, not a slow disk, is called a hang.
    restore_allowance_s_ = static_cast<double>(buffer_.size()) / 50e6;
    restoring_ = true;
    saving(true);
    restore_newest_checkpoint(state);
    saving(false);
    restoring_ = false;
  }
  last_save_step_ = restored_step_;
  last_save_time_ = wall_now();
  resolve_checkpoint_interval();
  heartbeat(restored_step_, restored_step_);
  last_progress_ = wall_now();
  return restored_step_;
}

void TrainResilienceHooks::agree_job_start_and_deadline() {
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
  int watch = drain_watch_ ? 1 : 0;
  broadcast(mpi_, watch);
  drain_watch_ = watch == 1;
}

void TrainResilienceHooks::resume_straggler() {
  // A straggler fault fired in an earlier attempt and lasting beyond it (duration 0: until the job ends)
  // still slows its slot: the slow part is the slot's hardware, not the process a relaunch replaced. (Its
  // fired record keeps it from being injected again; a drained slot's replacement is another slot.)
  const double now = wall_now();
  for (const auto& e : read_event_log(log_->path()).events) {
    if (e["type"] != event::fault_injected || e.value("kind", "") != "straggler" ||
        e.value("slot", -1) != slot_)
      continue;
    const double duration = e.value("duration_s", 0.0);
    const double until = duration > 0 ? e.value("t", 0.0) + duration : 1e300;
    if (until <= now) continue;
    straggler_factor_ = e.value("factor", 1.0);
    straggler_until_ = until;
  }
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
    // A run dir removed (or moved) under the job: training on would log into a file nobody reads, with the
    // lock gone and checkpoints recreated where no event says they are. Rank 0 stops the job (exit 3).
    if (log_->removed())
      throw runtime_error(
          fmt::format("--run-dir {}: its event log is no longer there (the run dir removed, moved or "
                      "replaced during the run?); the job stops at step {} rather than train on without its "
                      "event log and lock",
                      dir_.string(), step));
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
    rollback_reason_ = fmt::format(
        "loss or gradient norm not finite at step {}: stopped for a rollback to the last checkpoint "
        "(--resume goes on from it)",
        step);
    return false;
  }
  const bool periodic = step % o_.check_every == 0;
  const bool save = checkpoint_due(step, out.slowest_rank_seconds);
  if ((periodic || save) && vote_sdc(step)) {
    rollback_ = true;
    rollback_reason_ = fmt::format(
        "silent data corruption detected at step {} (the replicas' weights disagree): stopped for a "
        "rollback to the last checkpoint (--resume goes on from it)",
        step);
    return false;
  }
  if (periodic) check_stragglers(step);
  if (async_.pending()) {
    // A finished write's commit (and the prune, each rank reading back its shard of older ones) is checkpoint
    // work: the watchdog gives it the save allowance, not the step timeout.
    saving(true);
    poll_async(false);
    saving(false);
  }
  if (save) save_checkpoint(step);
  for (auto it = corrupt_pending_.begin(); it != corrupt_pending_.end();) {
    corrupt_newest_checkpoint(*it, step);
    it = corrupt_pending_.erase(it);
  }
  last_progress_ = wall_now();
  any_step_ = true;
  switch (agreed_stop()) {
    case 1:
      deadline_stop_ = true;
      return false;
    case 2:
      // The supervisor drains a straggling slot: this step's checkpoint first (unless one was started
      // above), committed before the attempt ends (on_finish), so the relaunch resumes here. At the final
      // step the job is done: it ends as completed, and the supervisor says the slot was not drained.
      if (o_.last_step > 0 && step >= o_.last_step) return true;
      if (!save) save_checkpoint(step);
      drain_stop_ = true;  // attempt_end reason "drain"
      return false;
    default:
      return true;
  }
}

int TrainResilienceHooks::agreed_stop() {
  if (!deadline_ && !drain_watch_) return 0;  // the same on every rank (agreed at the start)
  int stop = 0;
  if (mpi_.is_root()) {  // rank 0's clock and view of the run dir decide for all
    std::error_code ec;
    if (deadline_ && wall_now() >= *deadline_)
      stop = 1;
    else if (drain_watch_ && std::filesystem::exists(dir_ / "drain-request", ec))
      stop = 2;
  }
  broadcast(mpi_, stop);
  return stop;
}

void TrainResilienceHooks::on_finish(std::int64_t last_step) {
  if (async_.pending()) {
    saving(true);
    poll_async(true);
    saving(false);
  }
  stop_ = true;
  if (watchdog_.joinable()) watchdog_.join();
  if (mpi_.is_root()) {
    auto e = make_event(event::attempt_end);
    e["last_step"] = last_step;
    e["reason"] = rollback_        ? "rollback"
                  : deadline_stop_ ? "time budget"
                  : drain_stop_    ? "drain"
                                   : "completed";
    log(e, Durability::fsync);
    if (!std::getenv("FB_SUPERVISED") && !rollback_ && !deadline_stop_ && !drain_stop_)
      log(make_event(event::job_end), Durability::fsync);
  }
}

void TrainResilienceHooks::corrupt_newest_checkpoint(const PlannedFault& f, std::int64_t step) {
  const auto committed = store_.committed_steps();
  fired_->mark(f);
  auto e = make_event(event::fault_injected);
  e["kind"] = "ckpt-corrupt";
  e["rank"] = mpi_.rank();
  e["slot"] = slot_;  // as every fault_injected event (docs/resilience.md)
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

}  // namespace fb::resilience
