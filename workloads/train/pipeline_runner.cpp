#include "workloads/train/pipeline_runner.hpp"

namespace fb::workloads::train {

PipelineRunner::PipelineRunner(StepContext& c) : c_(c) {
  const std::int64_t P = c.o.parallel.pp, M = c.plan.shape.grad_accum;
  schedule_ = one_f_one_b_schedule(P, c.coords.p, M);
  slots_ = micro_batches_in_flight(P, c.coords.p, M);
}

double PipelineRunner::run(PipelineStage& stage) {
  double loss = 0;
  for (const auto& op : schedule_) {
    if (op.kind == PipeOpKind::forward)
      loss += stage.forward(op.micro_batch);
    else if (op.kind == PipeOpKind::backward)
      stage.backward(op.micro_batch, op.micro_batch + 1 == c_.plan.shape.grad_accum);
    else
      transfer(op, stage);
  }
  return loss;
}

// Over the two-rank communicator of the pair (rank 0 the earlier stage): broadcast from the sender for one
// direction, sendrecv for the combined exchanges. Time blocked here (waiting for the neighbour, and the
// transfer) is the pipeline bubble.
void PipelineRunner::transfer(const PipeOp& op, PipelineStage& stage) {
  c_.mark(kBubble);
  const std::int64_t n = c_.rows * c_.m.hidden;
  const auto count = static_cast<std::size_t>(n);
  const double bytes = static_cast<double>(n * c_.elem());
  auto& prev = c_.groups.prev;
  auto& next = c_.groups.next;
  const DType dt = c_.dt;
  switch (op.kind) {
    case PipeOpKind::recv_forward:
      prev->broadcast(stage.input(op.micro_batch), stage.input(op.micro_batch), count, dt, 0);
      c_.count_collective("pp_p2p/activations", bytes);
      break;
    case PipeOpKind::send_forward:
      next->broadcast(stage.output(), stage.output(), count, dt, 0);
      c_.count_collective("pp_p2p/activations", bytes);
      break;
    case PipeOpKind::send_forward_recv_backward:
      next->sendrecv(stage.output(), 1, stage.grad(), 1, count, dt);
      c_.count_collective("pp_p2p/activations", bytes);
      c_.count_collective("pp_p2p/grads", bytes);
      break;
    case PipeOpKind::recv_backward:
      next->broadcast(stage.grad(), stage.grad(), count, dt, 1);
      c_.count_collective("pp_p2p/grads", bytes);
      break;
    case PipeOpKind::send_backward:
      prev->broadcast(stage.grad(), stage.grad(), count, dt, 1);
      c_.count_collective("pp_p2p/grads", bytes);
      break;
    case PipeOpKind::send_backward_recv_forward:
      prev->sendrecv(stage.grad(), 0, stage.input(op.other_micro_batch), 0, count, dt);
      c_.count_collective("pp_p2p/activations", bytes);
      c_.count_collective("pp_p2p/grads", bytes);
      break;
    case PipeOpKind::forward:
    case PipeOpKind::backward:
      break;
  }
}

}  // namespace fb::workloads::train
