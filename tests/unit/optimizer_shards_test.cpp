// ZeRO-1 sharding of a parameter region (workloads/train/optimizer_shards.hpp): bucket padding, each shard's
// parts, and that the shards together own every element of every tensor exactly once.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "workloads/train/optimizer_shards.hpp"

namespace fb::workloads::train {
namespace {

void expect_piece(const OwnedPiece& p, std::int64_t global, std::int64_t local, std::int64_t count) {
  EXPECT_EQ(p.global, global);
  EXPECT_EQ(p.local, local);
  EXPECT_EQ(p.count, count);
}

TEST(PaddedBucketEnd, RoundsUpToShardsTimesTheAlignment) {
  static_assert(kShardAlign == 64);
  EXPECT_EQ(padded_bucket_end(0, 1000, 2), 1024);            // 2 · 64 = 128: 1000 → 1024
  EXPECT_EQ(padded_bucket_end(0, 1024, 2), 1024);            // already a multiple
  EXPECT_EQ(padded_bucket_end(1024, 1, 4), 1280);            // 4 · 64 = 256
  EXPECT_EQ(padded_bucket_end(512, 50000, 3), 512 + 50112);  // 3 · 64 = 192: 261 units
  EXPECT_EQ(padded_bucket_end(7, 1000, 1), 1007);            // one shard: no padding
  EXPECT_EQ(padded_bucket_end(256, 0, 4), 256);              // an empty bucket stays empty
}

TEST(RegionShards, EachShardOwnsItsPartOfEveryBucketPackedInOrder) {
  // Two buckets over 2 shards: [0, 256) and [256, 768); parts of 128 and 256 elements.
  const std::vector<GradBucket> buckets{{0, 256}, {256, 768}};
  const RegionShards s0(buckets, 2, 0), s1(buckets, 2, 1);
  EXPECT_EQ(s0.local_count(), 384);
  EXPECT_EQ(s0.part(0), 128);
  EXPECT_EQ(s0.part(1), 256);
  EXPECT_EQ(s1.owned_begin(0), 128);
  EXPECT_EQ(s1.owned_begin(1), 512);
  const auto o1 = s1.owned();
  ASSERT_EQ(o1.size(), 2u);
  expect_piece(o1[0], 128, 0, 128);
  expect_piece(o1[1], 512, 128, 256);
}

TEST(RegionShards, ATensorAcrossTwoBucketsSplitsIntoItsOwnedPieces) {
  const std::vector<GradBucket> buckets{{0, 256}, {256, 768}};
  // A tensor of elements [200, 600): shard 0 owns [0, 128) and [256, 512), so [256, 512) of it;
  // shard 1 owns [128, 256) and [512, 768): [200, 256) and [512, 600).
  const auto p0 = RegionShards(buckets, 2, 0).owned_within(200, 400);
  ASSERT_EQ(p0.size(), 1u);
  expect_piece(p0[0], 256, 128, 256);
  const auto p1 = RegionShards(buckets, 2, 1).owned_within(200, 400);
  ASSERT_EQ(p1.size(), 2u);
  expect_piece(p1[0], 200, 72, 56);
  expect_piece(p1[1], 512, 128, 88);
}

TEST(RegionShards, TheShardsTogetherOwnEveryElementOnce) {
  // Tensors of odd sizes laid out in three padded buckets over 3 shards.
  const std::vector<std::int64_t> sizes{1, 127, 4096, 33, 1000, 5, 640};
  const std::vector<std::size_t> bucket_after{1, 4, 6};  // the tensor index that closes each bucket
  std::vector<std::pair<std::int64_t, std::int64_t>> tensors;
  std::vector<GradBucket> buckets;
  std::int64_t count = 0, begin = 0;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    tensors.emplace_back(count, sizes[t]);
    count += sizes[t];
    for (std::size_t b : bucket_after)
      if (b == t) {
        count = padded_bucket_end(begin, count - begin, 3);
        buckets.push_back({begin, count});
        begin = count;
      }
  }
  std::vector<int> owners(static_cast<std::size_t>(count), 0);
  for (int s = 0; s < 3; ++s) {
    const RegionShards shards(buckets, 3, s);
    EXPECT_EQ(shards.local_count() * 3, count);
    std::vector<int> local(static_cast<std::size_t>(shards.local_count()), 0);
    for (const auto& [offset, n] : tensors)
      for (const auto& p : shards.owned_within(offset, n))
        for (std::int64_t i = 0; i < p.count; ++i) {
          ++owners[static_cast<std::size_t>(p.global + i)];
          ++local[static_cast<std::size_t>(p.local + i)];
        }
    for (int u : local) EXPECT_LE(u, 1);  // no two tensor elements share a slot of the packed copy
  }
  for (const auto& [offset, n] : tensors)
    for (std::int64_t i = offset; i < offset + n; ++i) EXPECT_EQ(owners[static_cast<std::size_t>(i)], 1) << i;
}

TEST(RegionShards, RejectsBucketsThatDoNotTileOrSplit) {
  EXPECT_THROW(RegionShards({{0, 256}, {300, 556}}, 2, 0), std::invalid_argument);  // a gap
  EXPECT_THROW(RegionShards({{0, 257}}, 2, 0), std::invalid_argument);              // 257 / 2
  EXPECT_THROW(RegionShards({{0, 256}}, 2, 2), std::invalid_argument);              // no shard 2
  EXPECT_NO_THROW(RegionShards({{0, 257}}, 1, 0));
}

}  // namespace
}  // namespace fb::workloads::train
