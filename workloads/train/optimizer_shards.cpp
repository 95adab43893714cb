#include "workloads/train/optimizer_shards.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fb::workloads::train {

std::int64_t padded_bucket_end(std::int64_t begin, std::int64_t count, int shards) {
  if (shards <= 1 || count == 0) return begin + count;
  const std::int64_t unit = static_cast<std::int64_t>(shards) * kShardAlign;
  return begin + (count + unit - 1) / unit * unit;
}

RegionShards::RegionShards(std::vector<GradBucket> buckets, int shards, int shard)
    : buckets_(std::move(buckets)), shards_(shards), shard_(shard) {
  if (shards < 1 || shard < 0 || shard >= shards)
    throw std::invalid_argument("region shards: shard " + std::to_string(shard) + " of " +
                                std::to_string(shards));
  std::int64_t at = 0;
  for (const auto& b : buckets_) {
    if (b.begin != at || b.end < b.begin || (b.end - b.begin) % shards != 0)
      throw std::invalid_argument("region shards: bucket [" + std::to_string(b.begin) + ", " +
                                  std::to_string(b.end) + ") does not continue at " + std::to_string(at) +
                                  " or does not split into " + std::to_string(shards) + " parts");
    at = b.end;
  }
}

std::int64_t RegionShards::part(std::size_t b) const {
  return (buckets_[b].end - buckets_[b].begin) / shards_;
}

std::int64_t RegionShards::owned_begin(std::size_t b) const {
  return buckets_[b].begin + shard_ * part(b);
}

std::int64_t RegionShards::local_count() const {
  return buckets_.empty() ? 0 : buckets_.back().end / shards_;
}

// Every bucket before b is a multiple of shards long, so the packed parts before b's sum to begin / shards.
std::vector<OwnedPiece> RegionShards::owned() const {
  std::vector<OwnedPiece> out;
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    if (part(b) > 0) out.push_back({owned_begin(b), buckets_[b].begin / shards_, part(b)});
  return out;
}

std::vector<OwnedPiece> RegionShards::owned_within(std::int64_t offset, std::int64_t count) const {
  std::vector<OwnedPiece> out;
  const std::int64_t end = offset + count;
  for (const auto& p : owned()) {
    const std::int64_t lo = std::max(offset, p.global), hi = std::min(end, p.global + p.count);
    if (lo < hi) out.push_back({lo, p.local + (lo - p.global), hi - lo});
  }
  return out;
}

}  // namespace fb::workloads::train
