#include "resilience/checkpoint_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "resilience/checkpoint_test_hook.hpp"

namespace fb::resilience {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kFormat = "factorybench.checkpoint/v1";
constexpr std::size_t kChunk = 8u << 20;  // large sequential writes; hashing runs chunk by chunk

std::string errno_text(int e) {
  return std::strerror(e);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The step a directory name holds when it is the one name_for gives it: "step-" and eight or more digits
// (step 100000000 has nine), at most 18 (an int64 holds them). Another spelling of the same step
// ("step-000000012") is not a checkpoint: verify and prune address a step by its canonical name.
std::optional<std::int64_t> step_of(const std::string& name) {
  if (name.size() < 13 || name.size() > 23 || !name.starts_with("step-")) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  if (CheckpointStore::name_for(v) != name) return std::nullopt;
  return v;
}

// The manifest's checksum covers its canonical dump without the "checksum" member.
std::uint64_t manifest_checksum(nlohmann::json j) {
  j.erase("checksum");
  const std::string text = j.dump();
  return XXH64(text.data(), text.size(), 0);
}

std::optional<std::uint64_t> parse_hex64(const std::string& s) {
  if (s.size() != 16) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= static_cast<std::uint64_t>(c - 'a' + 10);
    else
      return std::nullopt;
  }
  return v;
}

// Reads the manifest; nullopt + reason when missing, unreadable or inconsistent.
std::optional<CheckpointInfo> read_manifest(const fs::path& dir, std::int64_t step, std::string* reason) {
  const auto path = dir / "manifest.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    *reason = "incomplete: no manifest (the writers stopped before the commit)";
    return std::nullopt;
  }
  // Only a regular file is read: a FIFO (or a device) put there would block the reader, and the job with it.
  if (!fs::is_regular_file(path, ec)) {
    *reason = "manifest is not a regular file";
    return std::nullopt;
  }
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const Error& e) {
    *reason = std::string("manifest unreadable: ") + e.what();
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *reason = "manifest is not valid JSON";
    return std::nullopt;
  }
  try {
    const auto stored = parse_hex64(j.at("checksum").get<std::string>());
    if (!stored || *stored != manifest_checksum(j)) {
      *reason = "manifest checksum mismatch";
      return std::nullopt;
    }
    if (j.at("format").get<std::string>() != kFormat) {
      *reason = "manifest format is not " + std::string(kFormat);
      return std::nullopt;
    }
    CheckpointInfo info;
    info.step = j.at("step").get<std::int64_t>();
    info.name = CheckpointStore::name_for(step);
    info.dir = dir;
    info.world_size = j.at("world_size").get<int>();
    if (j.contains("job")) info.job = j.at("job").get<std::string>();
    if (info.step != step) {
      *reason = fmt::format("manifest is for step {}", info.step);
      return std::nullopt;
    }
    for (const auto& s : j.at("shards")) {
      ShardInfo shard;
      shard.rank = s.at("rank").get<int>();
      shard.file = s.at("file").get<std::string>();
      shard.bytes = s.at("bytes").get<std::uint64_t>();
      shard.state_bytes = s.value("state_bytes", std::uint64_t{0});
      const auto h = parse_hex64(s.at("xxh64").get<std::string>());
      if (!h || shard.rank != static_cast<int>(info.shards.size()) ||
          shard.file.find('/') != std::string::npos) {
        *reason = "manifest has a malformed shard entry";
        return std::nullopt;
      }
      shard.xxh64 = *h;
      info.total_bytes += shard.bytes;
      info.shards.push_back(std::move(shard));
    }
    if (static_cast<int>(info.shards.size()) != info.world_size) {
      *reason = "manifest lists the wrong number of shards";
      return std::nullopt;
    }
    return info;
  } catch (const nlohmann::json::exception& e) {
    *reason = std::string("manifest is malformed: ") + e.what();
    return std::nullopt;
  }
}

// Streams a file through xxHash64; reads into `out` when it is not empty. Returns the hash or a reason.
std::optional<std::uint64_t> hash_file(const fs::path& path, std::uint64_t expected_bytes,
                                       std::span<std::byte> out, std::string* reason) {
  // O_NONBLOCK: a FIFO where a shard should be opens at once (and is refused below) instead of blocking
  // the rank, and the job, until a watchdog calls it a hang. A regular file ignores the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *reason = fmt::format("shard {} missing ({})", path.filename().string(), errno_text(errno));
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
    *reason = fmt::format("shard {} is not a regular file", path.filename().string());
    ::close(fd);
    return std::nullopt;
  }
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != expected_bytes) {
    *reason = fmt::format("shard {} has {} bytes, the manifest says {}", path.filename().string(), st.st_size,
                          expected_bytes);
    ::close(fd);
    return std::nullopt;
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  std::vector<std::byte> scratch(out.empty() ? kChunk : 0);
  std::uint64_t done = 0;
  bool ok = true;
  while (done < expected_bytes) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, expected_bytes - done));
    std::byte* dst = out.empty() ? scratch.data() : out.data() + done;
    const ssize_t got = ::pread(fd, dst, n, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      *reason = fmt::format("shard {} unreadable at offset {}", path.filename().string(), done);
      ok = false;
      break;
    }
    XXH64_update(state, dst, static_cast<std::size_t>(got));
    done += static_cast<std::uint64_t>(got);
  }
  const std::uint64_t h = XXH64_digest(state);
  XXH64_freeState(state);
  ::close(fd);
  if (!ok) return std::nullopt;
  return h;
}

std::int64_t nanoseconds(const struct timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

std::optional<std::uint64_t> CheckpointStore::shard_hash(const fs::path& path, std::uint64_t bytes,
                                                         std::string* reason) const {
  const auto stamp = [&]() -> std::optional<FileStamp> {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return FileStamp{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                     static_cast<std::uint64_t>(st.st_size), nanoseconds(st.st_mtim),
                     nanoseconds(st.st_ctim)};
  };
  const auto before = stamp();
  if (const auto it = hashed_.find(path.string());
      it != hashed_.end() && before && it->second.stamp == *before && before->size == bytes)
    return it->second.xxh64;
  const auto started_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  const auto h = hash_file(path, bytes, {}, reason);
  // Trust the hash later only if the file did not change while it was read and its last change is over a
  // second older than the read: file times are coarse (a clock tick), so a write right after the read could
  // otherwise leave the same stamp (git's "racily clean" index entries have the same problem).
  const auto after = stamp();
  if (h && before && after && *before == *after &&
      std::max(before->mtime_ns, before->ctime_ns) < started_ns - 1'000'000'000)
    hashed_[path.string()] = {*before, *h};
  else
    hashed_.erase(path.string());
  return h;
}

std::uint64_t checksum64(std::span<const std::byte> data) {
  return XXH64(data.data(), data.size(), 0);
}

std::string hex64(std::uint64_t value) {
  return fmt::format("{:016x}", value);
}

CheckpointStore::CheckpointStore(fs::path root) : root_(std::move(root)) {}

std::string CheckpointStore::name_for(std::int64_t step) {
  return fmt::format("step-{:08d}", step);
}
std::string CheckpointStore::shard_file(int rank) {
  return fmt::format("rank-{:05d}.shard", rank);
}
fs::path CheckpointStore::dir_for(std::int64_t step) const {
  return root_ / name_for(step);
}

ShardInfo CheckpointStore::write_shard(std::int64_t step, int rank, std::span<const std::byte> data,
                                       const ShardWriteOptions& options) const {
  const auto t0 = std::chrono::steady_clock::now();
  const auto dir = dir_for(step);
  std::error_code ec;
  const bool root_existed = fs::is_directory(root_, ec);
  // A link left at the step's own name (a copied run dir, a hand repair) is replaced, not written through:
  // the shards and then the manifest would land in the checkpoint it names, perhaps the one this run resumed
  // from. unlink(2) removes a link and never a directory (another rank may have made it meanwhile).
  if (fs::is_symlink(dir, ec)) ::unlink(dir.c_str());
  const bool created = fs::create_directories(dir, ec);
  if (ec)
    throw runtime_error(fmt::format("cannot create checkpoint directory {}: {}", dir.string(), ec.message()));
  // The new directories' own entries are durable before any shard in them counts (the rank that created
  // them syncs their parents; the others find them there).
  if (created) {
    sync_directory(root_);
    if (!root_existed) sync_directory(root_.has_parent_path() ? root_.parent_path() : fs::path("."));
  }
  ShardInfo info;
  info.rank = rank;
  info.file = shard_file(rank);
  info.bytes = data.size();
  const auto final_path = dir / info.file;
  const auto tmp_path = dir / ("." + info.file + ".tmp");
  // A fresh file, never one reached through a link or a FIFO left at that name (it would be written through,
  // or block): whatever is there is a leftover of this store's own, removed first.
  ::unlink(tmp_path.c_str());
  const int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw runtime_error(fmt::format("cannot create {}: {}", tmp_path.string(), errno_text(errno)));
  const auto fail = [&](int err, const std::string& what) {
    ::close(fd);
    ::unlink(tmp_path.c_str());
    throw runtime_error(
        fmt::format("checkpoint shard {}: {}: {}", final_path.string(), what, errno_text(err)));
  };
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  std::uint64_t done = 0;
  while (done < data.size()) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, data.size() - done));
    if (options.fail_after_bytes) {
      if (done >= *options.fail_after_bytes) {
        XXH64_freeState(state);
        fail(ENOSPC, fmt::format("write failed at offset {} (injected)", done));
      }
      n = static_cast<std::size_t>(std::min<std::uint64_t>(n, *options.fail_after_bytes - done));
    }
    const ssize_t w = ::write(fd, data.data() + done, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      XXH64_freeState(state);
      fail(err, fmt::format("write failed at offset {}", done));
    }
    XXH64_update(state, data.data() + done, static_cast<std::size_t>(w));
#ifdef SYNC_FILE_RANGE_WRITE
    // Start the write-back of this chunk now (it does not wait): the disk works while the next chunk is
    // copied and hashed, so the final fsync has little left to flush. Measured on ext4 (bench/
    // checkpoint_bench): 256 MiB in ~0.7x the time of one write(2) + fsync of the same bytes.
    ::sync_file_range(fd, static_cast<off_t>(done), w, SYNC_FILE_RANGE_WRITE);
#endif
    done += static_cast<std::uint64_t>(w);
    if (options.on_progress) options.on_progress(done);
  }
  if (options.fail_after_bytes && done >= *options.fail_after_bytes && data.size() > 0 &&
      *options.fail_after_bytes < data.size()) {
    XXH64_freeState(state);
    fail(ENOSPC, fmt::format("write failed at offset {} (injected)", done));
  }
  info.xxh64 = XXH64_digest(state);
  XXH64_freeState(state);
  checkpoint_test_pause(CheckpointPhase::shard, step, rank);
  if (::fsync(fd) != 0) fail(errno, "fsync failed");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_path.c_str());
    throw runtime_error(
        fmt::format("checkpoint shard {}: close failed: {}", final_path.string(), errno_text(err)));
  }
  if (::rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_path.c_str());
    throw runtime_error(
        fmt::format("checkpoint shard {}: rename failed: {}", final_path.string(), errno_text(err)));
  }
  sync_directory(dir);
  info.write_s = seconds_since(t0);
  return info;
}

CheckpointInfo CheckpointStore::commit(std::int64_t step, std::vector<ShardInfo> shards) const {
  nlohmann::json list = nlohmann::json::array();
  CheckpointInfo info;
  info.step = step;
  info.name = name_for(step);
  info.dir = dir_for(step);
  info.world_size = static_cast<int>(shards.size());
  for (std::size_t r = 0; r < shards.size(); ++r) {
    if (shards[r].rank != static_cast<int>(r))
      throw runtime_error(
          fmt::format("checkpoint {}: shard {} is for rank {}", info.name, r, shards[r].rank));
    list.push_back({{"rank", shards[r].rank},
                    {"file", shards[r].file},
                    {"bytes", shards[r].bytes},
                    {"xxh64", hex64(shards[r].xxh64)}});
    if (shards[r].state_bytes > 0) list.back()["state_bytes"] = shards[r].state_bytes;
    info.total_bytes += shards[r].bytes;
  }
  for (const auto& shard : shards) {
    std::error_code ec;
    const auto path = info.dir / shard.file;
    const auto size = fs::file_size(path, ec);
    if (ec || size != shard.bytes)
      throw runtime_error(
          fmt::format("checkpoint {}: not committed: shard {} {}", info.name, shard.file,
                      ec ? "is missing" : fmt::format("has {} bytes, expected {}", size, shard.bytes)));
  }
  nlohmann::json j = {{"format", kFormat},
                      {"step", step},
                      {"world_size", info.world_size},
                      {"total_bytes", info.total_bytes},
                      {"shards", list}};
  if (!job_.empty()) j["job"] = job_;
  info.job = job_;
  j["checksum"] = hex64(manifest_checksum(j));
  checkpoint_test_pause(CheckpointPhase::manifest, step, 0);
  // write_file_atomic writes through a symlink or a FIFO at the target (as a user's -o asks): here either
  // would be a leftover, and a link could lead into an older, verified checkpoint. It is replaced instead.
  const auto manifest = info.dir / "manifest.json";
  std::error_code ec;
  const auto st = fs::symlink_status(manifest, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) fs::remove_all(manifest, ec);
  write_file_atomic(manifest, j.dump(1) + "\n");
  info.shards = std::move(shards);
  return info;
}

std::optional<CheckpointInfo> CheckpointStore::verify_manifest(std::int64_t step, int world_size,
                                                               std::string* reason) const {
  std::string why;
  auto info = read_manifest(dir_for(step), step, &why);
  if (info && info->world_size != world_size) {
    why = fmt::format("written by {} ranks, this job has {}", info->world_size, world_size);
    info.reset();
  }
  if (!info && reason) *reason = why;
  return info;
}

std::optional<CheckpointInfo> CheckpointStore::verify(std::int64_t step, int world_size,
                                                      std::string* reason) const {
  std::string why;
  auto info = verify_manifest(step, world_size, &why);
  if (info) {
    for (const auto& s : info->shards) {
      const auto h = shard_hash(info->dir / s.file, s.bytes, &why);
      if (!h) {
        info.reset();
        break;
      }
      if (*h != s.xxh64) {
        why = fmt::format("shard {} checksum mismatch (xxh64 {}, the manifest says {})", s.file, hex64(*h),
                          hex64(s.xxh64));
        info.reset();
        break;
      }
    }
  }
  if (!info && reason) *reason = why;
  return info;
}

ResumeChoice CheckpointStore::find_newest_valid(int world_size, std::optional<std::int64_t> below,
                                                Check check) const {
  ResumeChoice choice;
  auto steps = list_steps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    if (below && *it >= *below) continue;
    std::string reason;
    if (auto info = check == Check::manifest ? verify_manifest(*it, world_size, &reason)
                                             : verify(*it, world_size, &reason)) {
      choice.chosen = std::move(info);
      break;
    }
    choice.skipped.push_back({name_for(*it), reason});
  }
  return choice;
}

void CheckpointStore::read_shard(const CheckpointInfo& checkpoint, int rank, std::span<std::byte> out) const {
  if (rank < 0 || rank >= static_cast<int>(checkpoint.shards.size()))
    throw runtime_error(fmt::format("checkpoint {} has no shard for rank {}", checkpoint.name, rank));
  const auto& s = checkpoint.shards[static_cast<std::size_t>(rank)];
  if (out.size() != s.bytes)
    throw runtime_error(fmt::format("checkpoint {}: shard {} has {} bytes, this rank's state has {}",
                                    checkpoint.name, s.file, s.bytes, out.size()));
  std::string why;
  const auto h = hash_file(checkpoint.dir / s.file, s.bytes, out, &why);
  if (!h) throw runtime_error(fmt::format("checkpoint {}: {}", checkpoint.name, why));
  if (*h != s.xxh64)
    throw runtime_error(
        fmt::format("checkpoint {}: shard {} checksum mismatch (xxh64 {}, the manifest says {})",
                    checkpoint.name, s.file, hex64(*h), hex64(s.xxh64)));
}

std::vector<std::int64_t> CheckpointStore::list_steps() const {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) return steps;
  for (const auto& entry : fs::directory_iterator(root_, ec))
    if (entry.is_directory(ec))
      if (auto s = step_of(entry.path().filename().string())) steps.push_back(*s);
  std::sort(steps.begin(), steps.end());
  return steps;
}

std::vector<std::int64_t> CheckpointStore::committed_steps() const {
  std::vector<std::int64_t> out;
  for (const auto s : list_steps()) {
    std::string why;
    if (read_manifest(dir_for(s), s, &why)) out.push_back(s);
  }
  return out;
}

std::optional<std::string> CheckpointStore::written_by_another_job(int world_size, int rank,
                                                                   std::uint64_t shard_bytes,
                                                                   std::uint64_t state_bytes) const {
  const auto steps = list_steps();
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    std::string why;
    const auto info = read_manifest(dir_for(*it), *it, &why);
    if (!info) continue;  // damaged or uncommitted: the walk-back deals with it
    if (info->world_size != world_size)
      return fmt::format("checkpoint {} was written by {} ranks, this job has {}", info->name,
                         info->world_size, world_size);
    const auto& shard = info->shards[static_cast<std::size_t>(rank)];
    if (shard.bytes != shard_bytes)
      return fmt::format("checkpoint {}: rank {}'s shard holds {}, this run's state is {}", info->name, rank,
                         format_bytes(shard.bytes), format_bytes(shard_bytes));
    if (shard.state_bytes > 0 && state_bytes > 0 && shard.state_bytes != state_bytes)
      return fmt::format(
          "checkpoint {}: rank {}'s shard holds {} of model state (padded to {}), this run's "
          "model state is {}",
          info->name, rank, format_bytes(shard.state_bytes), format_bytes(shard.bytes),
          format_bytes(state_bytes));
    // Sizes that fit say nothing of the shapes: the job (model digest, layout, dtype) must be the same too.
    if (!job_.empty() && !info->job.empty() && info->job != job_)
      return fmt::format("checkpoint {} was written by another job ({}); this run is {}", info->name,
                         info->job, job_);
  }
  return std::nullopt;
}

std::vector<std::int64_t> steps_to_prune(const std::vector<std::int64_t>& present,
                                         const std::vector<std::int64_t>& verified, int keep) {
  const auto n = static_cast<std::size_t>(std::max(keep, 1));
  if (verified.size() < n) return {};
  const std::int64_t oldest_kept = verified[verified.size() - n];
  std::vector<std::int64_t> out;
  for (const auto s : present)
    if (s < oldest_kept) out.push_back(s);
  return out;
}

std::vector<std::string> CheckpointStore::prune(int keep, int world_size, std::int64_t committed_now,
                                                std::vector<std::string>* failed) const {
  auto committed = committed_steps();
  std::erase_if(committed, [&](std::int64_t s) { return s >= committed_now; });
  // The checkpoint just committed does not count: its writers hashed what they wrote, but nothing has read
  // it back, and damage between the write and the commit would go unseen. The --keep newest older ones
  // that verify stay beside it; it counts from the next commit on, once verify has read it.
  std::vector<std::int64_t> verified;  // newest first while checking, then ascending
  for (auto it = committed.rbegin();
       it != committed.rend() && verified.size() < static_cast<std::size_t>(keep); ++it)
    if (verify(*it, world_size, nullptr)) verified.push_back(*it);
  std::reverse(verified.begin(), verified.end());
  return prune_verified(keep, committed_now, verified, failed);
}

bool CheckpointStore::verify_rank(std::int64_t step, int world_size, int rank, std::string* reason) const {
  std::string why;
  const auto info = verify_manifest(step, world_size, &why);
  bool ok = info && rank >= 0 && rank < static_cast<int>(info->shards.size());
  if (ok) {
    const auto& shard = info->shards[static_cast<std::size_t>(rank)];
    const auto h = shard_hash(info->dir / shard.file, shard.bytes, &why);
    ok = h && *h == shard.xxh64;
    if (h && !ok)
      why = fmt::format("shard {} checksum mismatch (xxh64 {}, the manifest says {})", shard.file, hex64(*h),
                        hex64(shard.xxh64));
  }
  if (!ok && reason) *reason = why;
  return ok;
}

std::vector<std::string> CheckpointStore::prune_verified(int keep, std::int64_t committed_now,
                                                         const std::vector<std::int64_t>& verified,
                                                         std::vector<std::string>* failed) const {
  // Only steps up to the one just committed take part: newer directories are another run's (a fresh run in
  // an old run dir, or a resume that walked back past them). Counting them removed this run's own commits.
  auto present = list_steps();
  std::erase_if(present, [&](std::int64_t s) { return s > committed_now; });
  std::vector<std::string> removed;
  for (const auto s : steps_to_prune(present, verified, keep)) {
    const auto dir = dir_for(s);
    std::error_code ec;
    if (fs::is_symlink(dir, ec)) {
      fs::remove(dir, ec);  // a linked-in checkpoint: the link goes, what it names is not ours to uncommit
    } else {
      fs::remove(dir / "manifest.json", ec);  // uncommit first: a half-removed checkpoint is never taken
      checkpoint_test_pause(CheckpointPhase::prune, s, 0);
      if (!ec) fs::remove_all(dir, ec);
    }
    // A checkpoint left behind holds its space: retention that fails silently fills the volume until a
    // save fails with ENOSPC, far from the cause.
    if (ec) {
      if (failed) failed->push_back(fmt::format("{}: {}", name_for(s), ec.message()));
      continue;
    }
    removed.push_back(name_for(s));
  }
  if (!removed.empty()) sync_directory(root_);
  return removed;
}

void AsyncShardWriter::start(const CheckpointStore& store, std::int64_t step, int rank,
                             std::vector<std::byte> data, ShardWriteOptions options) {
  if (future_.valid()) throw runtime_error("an asynchronous checkpoint write is already pending");
  step_ = step;
  buffer_ = std::move(data);  // owned here until wait() returns; the thread reads it in place
  future_ = std::async(std::launch::async, [this, &store, step, rank, opts = std::move(options)]() {
    return store.write_shard(step, rank, buffer_, opts);
  });
}

bool AsyncShardWriter::done() const {
  return future_.valid() && future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

ShardInfo AsyncShardWriter::wait() {
  if (!future_.valid()) throw runtime_error("no asynchronous checkpoint write is pending");
  return future_.get();
}

std::vector<std::byte> AsyncShardWriter::take_buffer() {
  if (future_.valid()) future_.wait();  // never hand out the buffer while the thread reads it
  return std::move(buffer_);
}

AsyncShardWriter::~AsyncShardWriter() {
  if (future_.valid()) future_.wait();
}

}  // namespace fb::resilience
