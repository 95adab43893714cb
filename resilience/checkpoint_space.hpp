#pragma once
// Whether a run dir's volume can hold the checkpoints a job keeps: --keep verified ones, the one just
// committed (it counts once read back, at the next commit) and the one being written
// (resilience/checkpoint_store.hpp), each of `bytes_per_checkpoint` (every rank's shard). Checkpoints already
// in the run dir (a relaunch, a --resume) count as the job's space, not as a shortfall, or no crash could be
// recovered on a volume the first attempt fitted.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace fb::resilience {

// The problem in words ("--keep 2 + 2 checkpoints OF_WHAT need 40 MiB, but /x has 10 MiB free"; OF_WHAT
// says what one checkpoint is: "of 8 rank(s)"), or nothing when 90% of the free space plus the run dir's
// own checkpoints holds them (or the volume cannot be read).
std::optional<std::string> checkpoint_space_problem(const std::filesystem::path& run_dir, int keep,
                                                    double bytes_per_checkpoint, const std::string& of_what);

}  // namespace fb::resilience
