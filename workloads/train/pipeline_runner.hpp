#pragma once
// Runs a pipeline stage's 1F1B schedule for one step (workloads/pipeline_schedule.hpp): forwards and
// backwards of micro-batches through the stage, and the blocking point-to-point transfers with the
// neighbouring stages. Without pipeline parallelism the schedule is F0 B0 F1 B1 ... and nothing moves.
#include <cstdint>
#include <vector>

#include "workloads/pipeline_schedule.hpp"
#include "workloads/train/step_context.hpp"

namespace fb::workloads::train {

// What the runner needs of a stage. Pointers are this rank's rows (sequence parallelism: T/tp) of T×h
// buffers in the step dtype.
class PipelineStage {
 public:
  virtual ~PipelineStage() = default;
  // Returns the micro-batch's loss on the last stage, 0 elsewhere.
  virtual double forward(std::int64_t micro_batch) = 0;
  // Leaves the gradient w.r.t. the stage input in grad().
  virtual void backward(std::int64_t micro_batch, bool last_micro_batch) = 0;
  virtual void* input(std::int64_t micro_batch) = 0;  // where a received activation goes
  virtual void* output() = 0;                         // the last forward's stage output
  virtual void* grad() = 0;  // gradient w.r.t. the stage output (received) and then its input (sent)
};

class PipelineRunner {
 public:
  explicit PipelineRunner(StepContext& c);
  // Micro-batches in flight on this stage (activation sets it needs).
  std::int64_t slots() const { return slots_; }
  // The stage's schedule for one step; returns the summed loss of its micro-batches.
  double run(PipelineStage& stage);

 private:
  void transfer(const PipeOp& op, PipelineStage& stage);
  StepContext& c_;
  std::vector<PipeOp> schedule_;
  std::int64_t slots_ = 1;
};

}  // namespace fb::workloads::train
