#pragma once
// A suite's train and resilience steps that share a --run-dir: a step that saves checkpoints there leaves
// them for the steps after it, and a later step that starts a fresh job there (train without --resume,
// resilience, which always starts fresh) refuses a run dir holding checkpoints. Found at the later step's
// turn, after the steps before it had run; checked by the suite's preflight instead.
#include <vector>

#include "tools/suite_file.hpp"

namespace fb::tools {

// A usage Error "suite step 'LATER': ..." naming the earlier step whose checkpoints the later one would find,
// for the first such pair. Only a save the earlier step's options make certain counts (--checkpoint-every N
// within its steps, --checkpoint-interval auto, which saves after the first step); a fixed
// --checkpoint-interval saves or not with the run's speed, and is left to the later step's turn.
void check_shared_run_dirs(const Suite& suite, const std::vector<ParsedStep>& parsed);

}  // namespace fb::tools
