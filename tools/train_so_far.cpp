#include "tools/train_so_far.hpp"

namespace fb::tools {
namespace {

// `to` takes the entries of `from` it has not got yet; a series that shrank (none does today) is copied.
template <typename T>
void append_new(std::vector<T>& to, const std::vector<T>& from) {
  if (from.size() < to.size()) {
    to = from;
    return;
  }
  to.insert(to.end(), from.begin() + static_cast<std::ptrdiff_t>(to.size()), from.end());
}

}  // namespace

void TrainSoFar::record(const workloads::TrainRun& run) {
  std::lock_guard lock(mutex_);
  if (!run_) {
    run_ = run;
    return;
  }
  // What a step changes (workloads/train_step.cpp run_training); the plan, the engines and the first step
  // are set before the first step, the counters the ranks agree only after the last.
  auto& r = *run_;
  append_new(r.step_seconds, run.step_seconds);
  append_new(r.profiled, run.profiled);
  r.steps_run = run.steps_run;
  r.last_step = run.last_step;
  r.loss = run.loss;
  r.grad_norm = run.grad_norm;
  r.collective_bytes = run.collective_bytes;
  r.collective_calls = run.collective_calls;
}

std::optional<workloads::TrainRun> TrainSoFar::snapshot() const {
  std::optional<workloads::TrainRun> copy;
  {
    std::lock_guard lock(mutex_);
    copy = run_;
  }
  if (copy) copy->breakdown_seconds = workloads::median_breakdown(copy->profiled);
  return copy;
}

}  // namespace fb::tools
