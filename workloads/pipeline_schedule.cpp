#include "workloads/pipeline_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace fb::workloads {

std::int64_t warmup_forwards(std::int64_t stages, std::int64_t stage, std::int64_t micro_batches) {
  return std::min(stages - stage - 1, micro_batches);
}

std::int64_t micro_batches_in_flight(std::int64_t stages, std::int64_t stage, std::int64_t micro_batches) {
  return std::min(stages - stage, micro_batches);
}

std::vector<PipeOp> one_f_one_b_schedule(std::int64_t stages, std::int64_t stage,
                                         std::int64_t micro_batches) {
  if (stages < 1) throw usage_error(fmt::format("invalid --pp {}: must be at least 1", stages));
  if (micro_batches < 1)
    throw usage_error(fmt::format("invalid --grad-accum {}: must be at least 1", micro_batches));
  if (stage < 0 || stage >= stages)
    throw usage_error(fmt::format("pipeline stage {} is outside [0, {})", stage, stages));
  const bool first = stage == 0, last = stage == stages - 1;
  const std::int64_t warmup = warmup_forwards(stages, stage, micro_batches);
  const std::int64_t steady = micro_batches - warmup;
  std::vector<PipeOp> ops;
  const auto push = [&](PipeOpKind k, std::int64_t mb, std::int64_t other = -1) {
    ops.push_back({k, mb, other});
  };
  for (std::int64_t i = 0; i < warmup; ++i) {
    if (!first) push(PipeOpKind::recv_forward, i);
    push(PipeOpKind::forward, i);
    if (!last) push(PipeOpKind::send_forward, i);
  }
  if (steady > 0 && !first) push(PipeOpKind::recv_forward, warmup);
  for (std::int64_t i = 0; i < steady; ++i) {
    const std::int64_t f = warmup + i;  // forward of this iteration; backward of micro-batch i
    push(PipeOpKind::forward, f);
    if (!last) push(PipeOpKind::send_forward_recv_backward, f, i);
    push(PipeOpKind::backward, i);
    if (!first) {
      if (i + 1 == steady)
        push(PipeOpKind::send_backward, i);
      else
        push(PipeOpKind::send_backward_recv_forward, i, f + 1);
    }
  }
  for (std::int64_t i = steady; i < micro_batches; ++i) {  // cool-down
    if (!last) push(PipeOpKind::recv_backward, i);
    push(PipeOpKind::backward, i);
    if (!first) push(PipeOpKind::send_backward, i);
  }
  return ops;
}

std::string schedule_string(const std::vector<PipeOp>& ops) {
  std::string out;
  for (const auto& op : ops) {
    if (op.kind != PipeOpKind::forward && op.kind != PipeOpKind::backward) continue;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}{}", op.kind == PipeOpKind::forward ? 'F' : 'B', op.micro_batch);
  }
  return out;
}

}  // namespace fb::workloads
