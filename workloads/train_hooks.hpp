#pragma once
// The contract between the training workload (workloads/train_*) and the resilience layer (resilience/):
// the training loop calls these hooks at fixed points; resilience implements them to inject faults, write
// and restore checkpoints, detect failures and log events. Without hooks, `train` simply runs its steps.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace fb::workloads {

// Access to the state a rank would checkpoint (its model shard: weights, master weights, optimizer moments).
class TrainStateAccess {
 public:
  virtual ~TrainStateAccess() = default;
  // Bytes of this rank's checkpointable state.
  virtual std::uint64_t bytes() const = 0;
  // Copies the state out (device to host when needed); `out.size() == bytes()`.
  virtual void snapshot(std::span<std::byte> out) = 0;
  // Replaces the state (host to device when needed); `in.size() == bytes()`.
  virtual void restore(std::span<const std::byte> in) = 0;
  // 64-bit checksum of the part of the state that data-parallel replicas hold identically (SDC vote).
  virtual std::uint64_t replicated_checksum() = 0;
  // Silent data corruption: flips one bit of the replicated state.
  virtual void flip_bit(std::uint64_t bit_index) = 0;
  // Makes the next step's loss (and gradient norm) NaN on this rank.
  virtual void poison_next_loss() = 0;
};

struct StepOutcome {
  double seconds = 0;               // this rank's step time
  double slowest_rank_seconds = 0;  // max over ranks (agreed by all ranks)
  double compute_seconds = 0;       // this rank's compute part (straggler score input)
  double loss = 0;                  // synthetic loss, identical on all ranks unless poisoned
  double grad_norm = 0;
  // This rank's own loss and gradient sum of squares were finite before the all-reduce that agrees `loss`
  // and `grad_norm` (a NaN anywhere spreads to every rank there; this flag says where it came from).
  bool local_finite = true;
};

class TrainHooks {
 public:
  virtual ~TrainHooks() = default;
  // After initialisation (model built, buffers allocated). Returns the first step to run: 0, or the step
  // after a restored checkpoint. Collective: every rank calls it.
  virtual std::int64_t on_start(TrainStateAccess& state) {
    (void)state;
    return 0;
  }
  // Before each step (1-based step numbers): fault injection point.
  virtual void before_step(std::int64_t step) { (void)step; }
  // After each step, on every rank. Returns false to stop the run early (e.g. rollback requested: the job
  // exits and the supervisor restarts it from a checkpoint). Collective when it returns false anywhere:
  // implementations must agree across ranks.
  virtual bool after_step(std::int64_t step, const StepOutcome& outcome) {
    (void)step;
    (void)outcome;
    return true;
  }
  // After the last step (or an early stop).
  virtual void on_finish(std::int64_t last_step) { (void)last_step; }
  // Why the run stopped before --steps on a detected fault (silent data corruption, a loss that is not
  // finite), for the result's failure; empty when it did not.
  virtual std::string stop_reason() const { return {}; }
};

}  // namespace fb::workloads
