#pragma once
// ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
// SC 2020), as Megatron-LM's distributed optimizer runs it: the fp32 master weights and Adam moments of a
// parameter region are split over its data-parallel group, each gradient bucket is reduce-scattered instead
// of all-reduced, each rank updates its own part of every bucket, and the updated weights are all-gathered.
// A bucket's size is padded to a multiple of shards × kShardAlign elements, so it splits into equal parts
// (NCCL's reduce-scatter and all-gather move equal counts) that start 16-byte aligned. Pure arithmetic on
// element offsets, tested without MPI (tests/unit/optimizer_shards_test.cpp).
#include <cstdint>
#include <span>
#include <vector>

namespace fb::workloads::train {

// Elements per shard of a bucket are a multiple of this: 16 bytes of fp32 is 4, of bf16 8; 64 keeps every
// part aligned for either, at a cost of under 64 · shards elements per bucket.
inline constexpr std::int64_t kShardAlign = 64;

// An element range [begin, end) of a region that is reduced (and sharded) as one.
struct GradBucket {
  std::int64_t begin = 0, end = 0;
};

// Where a bucket that starts at `begin` and holds `count` elements must end so that it splits into `shards`
// equal, aligned parts: count rounded up to a multiple of shards · kShardAlign (no padding for one shard).
std::int64_t padded_bucket_end(std::int64_t begin, std::int64_t count, int shards);

// A contiguous run of elements this shard owns: `global` in the region's layout, `local` in the shard's
// packed copy (master weights, moments), `count` elements.
struct OwnedPiece {
  std::int64_t global = 0, local = 0, count = 0;
};

// How one region is split over `shards` ranks: buckets tile [0, total) in order, each a multiple of
// shards · kShardAlign elements long (unless shards is 1); shard s owns part s of every bucket, and its
// packed copy holds those parts in bucket order.
class RegionShards {
 public:
  RegionShards() = default;
  // Throws std::invalid_argument when the buckets do not tile from 0 or do not split evenly.
  RegionShards(std::vector<GradBucket> buckets, int shards, int shard);

  int shards() const { return shards_; }
  int shard() const { return shard_; }
  const std::vector<GradBucket>& buckets() const { return buckets_; }
  // Elements in each part of bucket b, and where this shard's part starts (region layout).
  std::int64_t part(std::size_t b) const;
  std::int64_t owned_begin(std::size_t b) const;
  // Elements of the packed copy: the region's size over shards.
  std::int64_t local_count() const;
  // This shard's part of every bucket, in packed order.
  std::vector<OwnedPiece> owned() const;
  // The part of the element range [offset, offset + count) that this shard owns, in order.
  std::vector<OwnedPiece> owned_within(std::int64_t offset, std::int64_t count) const;

 private:
  std::vector<GradBucket> buckets_;
  int shards_ = 1, shard_ = 0;
};

}  // namespace fb::workloads::train
