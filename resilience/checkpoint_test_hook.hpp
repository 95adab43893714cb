#pragma once
// Test hook that pauses a checkpoint save at a named phase, so a test can land a crash, hang, kill -9 or
// corruption inside each phase of a (sync or async) save deterministically instead of racing a fast writer.
//
//   FACTORYBENCH_TEST_CKPT_PAUSE="PHASE=SECONDS[@STEP][,…]"   e.g. "shard=1.5" or "manifest=2@20,prune=0.2"
//   FACTORYBENCH_TEST_CKPT_MARK=FILE   each pause appends "PHASE STEP RANK\n" to FILE when it begins
//   FACTORYBENCH_TEST_CKPT_RELEASE=FILE   a pause ends early once FILE exists
//
// Phases, in save order: snapshot (state copied, write not started), shard (temporary shard file written,
// not yet fsync'ed and renamed), manifest (every shard durable, manifest not written), prune (an old
// checkpoint's manifest removed, its directory not yet), and on resume restore (rank 0 chose the checkpoint,
// no rank has read its shard yet). Unset: no effect and no cost beyond one getenv.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fb::resilience {

enum class CheckpointPhase { snapshot, shard, manifest, prune, restore };

struct CheckpointPause {
  CheckpointPhase phase{};
  double seconds = 0;
  std::int64_t step = -1;  // -1: every step
};

// Parses the FACTORYBENCH_TEST_CKPT_PAUSE syntax; usage Error naming the variable on bad text. Pure.
std::vector<CheckpointPause> parse_checkpoint_pauses(std::string_view text);

// Sleeps as the environment asks for this phase and step (and marks the file first).
void checkpoint_test_pause(CheckpointPhase phase, std::int64_t step, int rank);

}  // namespace fb::resilience
