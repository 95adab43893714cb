#pragma once
// Real checkpoints on a file system: `ROOT/step-00000030/rank-00000.shard … manifest.json`.
//
// Write protocol (a crash at any point never loses the previous checkpoint):
//   1. every rank writes its shard to a temporary file, fsyncs it, renames it to rank-NNNNN.shard and fsyncs
//      the directory (write_shard);
//   2. rank 0, once every shard is durable (the caller gathers the ShardInfos: that is the barrier), writes
//      manifest.json atomically (tmp + fsync + rename + directory fsync) with each shard's size and xxHash64
//      and the manifest's own checksum (commit). A checkpoint without a manifest does not exist.
// Resume takes the newest checkpoint whose manifest and every shard verify and says why newer ones were
// skipped. Retention (prune) counts verified checkpoints only: `--keep N` means N checkpoints that verify
// exist at every instant once N were written; nothing is removed until N newer ones verify, so the newest
// verified checkpoint is never removed. (It used to count every manifest: a checkpoint damaged after its
// commit still counted, and the commit of the next one pruned the last good older one: issue 16. Later it
// counted the one just committed on its sizes alone: a shard damaged before the commit cost the last good
// one.)
// This class does file I/O only; MPI coordination lives in the caller (train_resilience_hooks).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fb::resilience {

struct ShardInfo {
  int rank = 0;
  std::string file;  // name inside the checkpoint directory
  std::uint64_t bytes = 0;
  std::uint64_t xxh64 = 0;
  double write_s = 0;  // open → durable rename, this shard
  // The model's own state at the front of the shard (the rest is --state-bytes filler); 0: not recorded.
  // It tells apart two models padded to the same shard size.
  std::uint64_t state_bytes = 0;
};

struct CheckpointInfo {
  std::int64_t step = 0;
  std::string name;  // step-00000030
  std::filesystem::path dir;
  int world_size = 0;
  std::vector<ShardInfo> shards;  // index = rank
  std::uint64_t total_bytes = 0;
  std::string job;  // what wrote it (model, its digest, layout, dtype); "" in manifests from before the field
};

struct CheckpointSkipReason {
  std::string checkpoint, reason;
};

struct ResumeChoice {
  std::optional<CheckpointInfo> chosen;  // none: start from scratch
  std::vector<CheckpointSkipReason> skipped;
};

struct ShardWriteOptions {
  // Fault injection: fail like a full disk (ENOSPC) once this many bytes were written.
  std::optional<std::uint64_t> fail_after_bytes;
  // Called after each chunk with the bytes written so far (tests use it to pace a writer they kill).
  std::function<void(std::uint64_t)> on_progress;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::filesystem::path root);
  const std::filesystem::path& root() const { return root_; }
  // What this job is (the manifest's "job"): the model (and its file's digest), --layers, the parallel
  // layout, the dtype and the optimizer's sharding. A checkpoint whose shards have the right sizes but
  // another "job" holds another model's weights (same parameter count, other shapes): written_by_another_job
  // names it.
  void set_job(std::string job) { job_ = std::move(job); }

  static std::string name_for(std::int64_t step);  // "step-00000030"
  static std::string shard_file(int rank);         // "rank-00000.shard"
  std::filesystem::path dir_for(std::int64_t step) const;

  // Step 1 of the protocol for one rank. Throws a runtime Error (the temporary file removed) on failure.
  ShardInfo write_shard(std::int64_t step, int rank, std::span<const std::byte> data,
                        const ShardWriteOptions& options = {}) const;
  // Step 2, rank 0 only, after every rank's write_shard returned. `shards` index = rank. Refuses (runtime
  // Error, no manifest) when a listed shard file is missing or has another size: a manifest never names a
  // shard that is not there.
  CheckpointInfo commit(std::int64_t step, std::vector<ShardInfo> shards) const;

  // Reads and checks the manifest and every shard (size, xxHash64). nullopt + reason when it does not verify.
  // A shard this store object already hashed is not read again while its file is provably unchanged (same
  // device, inode, size, mtime and ctime, last modified over a second before it was hashed: a later write
  // in place or a rename over it changes the stamp); the first verification in a process always reads.
  std::optional<CheckpointInfo> verify(std::int64_t step, int world_size, std::string* reason) const;
  // The manifest's checks only (checksum, format, step, `world_size` shards): a rank restoring after rank 0
  // verified every shard reads its own through read_shard, which checks its hash, not all N again.
  std::optional<CheckpointInfo> verify_manifest(std::int64_t step, int world_size, std::string* reason) const;
  // The newest checkpoint that verifies, below step `below` when given (the walk-back after a checkpoint
  // failed on another rank); newer ones that do not verify are listed with the reason. `Check::manifest`
  // checks manifests only: a restore's choice, where each rank then hashes its own shard (one reader of
  // every shard would take world-size times as long, past the restore's hang allowance).
  enum class Check { every_shard, manifest };
  ResumeChoice find_newest_valid(int world_size, std::optional<std::int64_t> below = std::nullopt,
                                 Check check = Check::every_shard) const;
  // Reads one shard into `out` (must be the shard's size) and checks its checksum; runtime Error otherwise.
  void read_shard(const CheckpointInfo& checkpoint, int rank, std::span<std::byte> out) const;

  // A committed checkpoint (its manifest intact) that another job wrote: another world size, or a shard for
  // `rank` of another size than `shard_bytes` (another model, layout or --state-bytes). Not damage: a
  // resume that walked past it would start over and its saves would prune the other job's checkpoints.
  // The reason, naming the newest such checkpoint; nullopt when every committed one fits.
  // `state_bytes`: this run's model state in the shard, compared where the manifest recorded it. A manifest's
  // "job" other than set_job's (both recorded) is another job too.
  std::optional<std::string> written_by_another_job(int world_size, int rank, std::uint64_t shard_bytes,
                                                    std::uint64_t state_bytes = 0) const;

  // Step directories present, oldest first (committed or not).
  std::vector<std::int64_t> list_steps() const;
  // Steps with a manifest that parses (shards not read), oldest first.
  std::vector<std::int64_t> committed_steps() const;
  // Retention after committing step `committed_now`: keeps the `keep` newest older checkpoints that verify
  // for `world_size` ranks (every shard hashed: the committed ones are checked newest first until `keep`
  // verify) beside the one just committed, and removes every step directory older than the oldest of them
  // (checkpoints, damaged ones, uncommitted leftovers), manifest first; a symlinked step directory loses
  // only the link. Removes nothing while fewer than `keep` verify. The one just committed does not count
  // (nothing has read it back yet), and directories newer than it (another run's) are neither counted nor
  // removed. So up to keep + 1 committed checkpoints stay, plus one being written. Returns the names
  // removed, oldest first. A directory that cannot be removed (wholly or in part: its space is not freed)
  // is not among them; `failed` (when given) gets "NAME: reason" for it, as the job warns of it.
  std::vector<std::string> prune(int keep, int world_size, std::int64_t committed_now,
                                 std::vector<std::string>* failed = nullptr) const;
  // The same removal with the verification done elsewhere: `verified` (ascending) are the --keep newest
  // committed steps older than `committed_now` that verified on every rank (each rank hashing its own
  // shard: verify_rank). A job's rank 0 prunes with it; one reader of every shard would take world-size
  // times as long at every save.
  std::vector<std::string> prune_verified(int keep, std::int64_t committed_now,
                                          const std::vector<std::int64_t>& verified,
                                          std::vector<std::string>* failed = nullptr) const;
  // The manifest and shard `rank` of it (size, xxHash64; remembered as verify does).
  bool verify_rank(std::int64_t step, int world_size, int rank, std::string* reason) const;

 private:
  struct FileStamp {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0, ctime_ns = 0;
    bool operator==(const FileStamp&) const = default;
  };
  struct HashedFile {
    FileStamp stamp;
    std::uint64_t xxh64 = 0;
  };
  std::optional<std::uint64_t> shard_hash(const std::filesystem::path& path, std::uint64_t bytes,
                                          std::string* reason) const;

  std::string job_;
  std::filesystem::path root_;
  // Shard hashes computed by verify (prune re-checks the kept checkpoints at every commit; this spares
  // re-reading the unchanged ones). Used by one thread: verify and prune run on the training thread.
  mutable std::map<std::string, HashedFile> hashed_;
};

// The steps a prune removes, given the step directories present and those that verify: everything older
// than the oldest of the `keep` newest verified steps; nothing while fewer than `keep` verify. Directories
// newer than that are never removed (a save in flight, or a damaged checkpoint a re-run step overwrites).
// Pure; both lists ascending.
std::vector<std::int64_t> steps_to_prune(const std::vector<std::int64_t>& present,
                                         const std::vector<std::int64_t>& verified, int keep);

// xxHash64 (seed 0) of a buffer, as stored in manifests.
std::uint64_t checksum64(std::span<const std::byte> data);
std::string hex64(std::uint64_t value);

// Writes a shard in a background thread from a host copy of the state (async checkpointing): the caller
// snapshots into a host buffer, moves it into start, keeps training, and commits once every rank's writer is
// done. take_buffer() hands the buffer back after wait(), so the next snapshot reuses it (no allocation, no
// page faults, no second copy on the blocking path).
class AsyncShardWriter {
 public:
  AsyncShardWriter() = default;
  AsyncShardWriter(const AsyncShardWriter&) = delete;  // the thread refers to this object
  AsyncShardWriter& operator=(const AsyncShardWriter&) = delete;
  ~AsyncShardWriter();  // waits for a pending write

  void start(const CheckpointStore& store, std::int64_t step, int rank, std::vector<std::byte> data,
             ShardWriteOptions options = {});
  bool pending() const { return future_.valid(); }
  bool done() const;  // finished (successfully or not); never blocks
  ShardInfo wait();   // blocks; rethrows the writer's error
  // The buffer given to start (empty when none), once its write is over (waits for it if still pending).
  std::vector<std::byte> take_buffer();
  std::int64_t step() const { return step_; }

 private:
  std::vector<std::byte> buffer_;
  std::future<ShardInfo> future_;
  std::int64_t step_ = 0;
};

}  // namespace fb::resilience
