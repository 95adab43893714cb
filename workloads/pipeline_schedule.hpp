#pragma once
// The 1F1B pipeline schedule of one stage (Megatron-LM's non-interleaved schedule,
// forward_backward_pipelining_without_interleaving): what a stage computes and which point-to-point
// transfers it makes with its neighbours, in order. Pure (no MPI); the train step executes the list and
// tests/unit/pipeline_schedule_test.cpp checks it (order, counts, matching transfers, no deadlock).
//
// Stage s of P with M micro-batches runs w = min(P − s − 1, M) warm-up forwards, then M − w steady
// iterations of one forward and one backward, then w cool-down backwards. Micro-batches go forward and
// backward in increasing order, so at most min(P − s, M) of them are in flight (forward done, backward not)
// and micro-batch i can use activation slot i mod that number. M < P is allowed: the schedule stays correct,
// only the bubble (P − 1)/(M + P − 1) of the step grows.
//
// Transfers with no peer are left out: the first stage receives no activations and sends no gradients (it
// reads the embedding output), the last stage sends no activations and receives no gradients (it computes the
// loss). Combined transfers exchange both directions with one neighbour at once (as Megatron's batched
// isend/irecv); every transfer a stage lists is matched, in the same order, by the neighbour's mirror
// transfer, and executing each one as blocking cannot deadlock.
#include <cstdint>
#include <string>
#include <vector>

namespace fb::workloads {

enum class PipeOpKind {
  recv_forward,                // activations of `micro_batch` from the previous stage
  forward,                     // forward of `micro_batch` (the last stage: with logits and loss)
  send_forward,                // activations of `micro_batch` to the next stage
  send_forward_recv_backward,  // with the next stage: send activations of `micro_batch`, receive the
                               // output gradient of `other_micro_batch`
  recv_backward,               // output gradient of `micro_batch` from the next stage
  backward,                    // backward of `micro_batch`
  send_backward,               // input gradient of `micro_batch` to the previous stage
  send_backward_recv_forward,  // with the previous stage: send the input gradient of `micro_batch`,
                               // receive the activations of `other_micro_batch`
};

struct PipeOp {
  PipeOpKind kind;
  std::int64_t micro_batch = 0;
  std::int64_t other_micro_batch = -1;  // combined transfers: the micro-batch received
  bool operator==(const PipeOp&) const = default;
};

// The ordered operations of `stage` (0-based) of `stages` with `micro_batches`. Throws a usage Error when
// stages < 1, micro_batches < 1 or stage is outside [0, stages).
std::vector<PipeOp> one_f_one_b_schedule(std::int64_t stages, std::int64_t stage, std::int64_t micro_batches);

// Warm-up forwards of a stage: min(stages − stage − 1, micro_batches).
std::int64_t warmup_forwards(std::int64_t stages, std::int64_t stage, std::int64_t micro_batches);

// Micro-batches whose activations a stage holds at once: min(stages − stage, micro_batches).
std::int64_t micro_batches_in_flight(std::int64_t stages, std::int64_t stage, std::int64_t micro_batches);

// The compute order as text, "F0 F1 B0 F2 B1 B2" (transfers left out): for messages and tests.
std::string schedule_string(const std::vector<PipeOp>& ops);

}  // namespace fb::workloads
