#pragma once
// The training run so far, for the report a signal, a hang or a periodic save writes (tools/
// interrupt_report.hpp). Rank 0 records each measured step between steps, where the other ranks wait for it
// in the next step's first collective, so recording appends what the step added: O(1) per step. Building
// the result from every step so far (medians, rates) is O(steps) and happens only when a report is
// written: done after every step it made a 100000-step run slower as it went (a sort of every step time
// per step). Read on any thread; locked.
#include <mutex>
#include <optional>

#include "workloads/train_step.hpp"

namespace fb::tools {

class TrainSoFar {
 public:
  // After a measured step: the run as run_training holds it (the first call copies it whole, the plan with
  // it; later ones add the new steps and take what a step changes). From the first measured step on, the
  // loop only appends to its series (step_seconds, profiled); one found shorter is taken whole.
  void record(const workloads::TrainRun& run);
  // A copy with breakdown_seconds filled in; none before the first measured step.
  std::optional<workloads::TrainRun> snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::optional<workloads::TrainRun> run_;
};

}  // namespace fb::tools
