#include "workloads/train/tp_placement.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace fb::workloads::train {
namespace {

// How many times the ranks t = 0…tp−1 of a layout hold each whole column.
std::vector<int> column_holders(std::int64_t tp, auto place_of) {
  std::vector<int> held;
  for (std::int64_t t = 0; t < tp; ++t) {
    const TpPlacement p = place_of(t);
    held.resize(static_cast<std::size_t>(p.whole_out));
    for (std::int64_t j = 0; j < p.local_out(); ++j) ++held[static_cast<std::size_t>(p.whole_column(j))];
  }
  return held;
}

TEST(TpPlacement, EvenColumnSplitsCoverTheWholeTensorOnce) {
  // SwiGLU up projection of ffn 256 over 4 ranks: [gate | up], each rank 64 of each.
  for (std::int64_t tp : {1, 2, 4}) {
    const auto held = column_holders(tp, [&](std::int64_t t) {
      return column_parallel(128, {even_part(256, t, tp), even_part(256, t, tp)});
    });
    EXPECT_EQ(held, std::vector<int>(512, 1)) << "tp " << tp;
  }
  const TpPlacement p = column_parallel(128, {even_part(256, 1, 4), even_part(256, 1, 4)});
  EXPECT_EQ(p.whole_in, 128);
  EXPECT_EQ(p.whole_out, 512);
  EXPECT_EQ(p.local_out(), 128);
  EXPECT_EQ(p.whole_column(0), 64);     // rank 1's first gate column
  EXPECT_EQ(p.whole_column(63), 127);   // … and its last
  EXPECT_EQ(p.whole_column(64), 320);   // its first up column: 256 + 64
  EXPECT_EQ(p.whole_column(127), 383);  // … and its last
}

TEST(TpPlacement, RowParallelSplitsTheRows) {
  const TpPlacement p = row_parallel(64, 128, 3, 4);  // attention output: 4 ranks of 64 input rows
  EXPECT_EQ(p.whole_in, 256);
  EXPECT_EQ(p.row, 192);
  EXPECT_EQ(p.whole_out, 128);
  EXPECT_EQ(p.whole_column(127), 127);
}

TEST(TpPlacement, GqaKvHeadsSplitWhenTpDividesThem) {
  // 8 query heads, 4 kv heads of dim 16 over 2 ranks: rank 1 holds query heads 4–7 and kv heads 2–3.
  const TpPlacement p = gqa_qkv(64, 8, 4, 16, 1, 2);
  EXPECT_EQ(p.whole_out, (8 + 4 + 4) * 16);
  EXPECT_EQ(p.local_out(), (4 + 2 + 2) * 16);
  EXPECT_EQ(p.whole_column(0), 4 * 16);                 // query head 4
  EXPECT_EQ(p.whole_column(4 * 16), 8 * 16 + 2 * 16);   // K of kv head 2
  EXPECT_EQ(p.whole_column(6 * 16), 12 * 16 + 2 * 16);  // V of kv head 2
  EXPECT_EQ(p.copies, 1);
  EXPECT_EQ(p.copied.count, 0);
  const auto held = column_holders(2, [](std::int64_t t) { return gqa_qkv(64, 8, 4, 16, t, 2); });
  EXPECT_EQ(held, std::vector<int>(16 * 16, 1));
}

TEST(TpPlacement, GqaKvHeadsReplicatedOverTheRanksWhoseQueriesReadThem) {
  // tiny-dense's 4 query heads and 2 kv heads (dim 32) over 4 ranks: rank t holds query head t and kv head
  // t / 2, which query heads 2(t/2) and 2(t/2)+1 read; each kv head is held by 2 ranks.
  for (std::int64_t t = 0; t < 4; ++t) {
    const TpPlacement p = gqa_qkv(128, 4, 2, 32, t, 4);
    EXPECT_EQ(p.local_out(), 3 * 32);
    EXPECT_EQ(p.whole_column(0), t * 32);                  // its query head
    EXPECT_EQ(p.whole_column(32), 4 * 32 + (t / 2) * 32);  // K of kv head t/2
    EXPECT_EQ(p.whole_column(64), 6 * 32 + (t / 2) * 32);  // V of kv head t/2
    EXPECT_EQ(p.copies, 2);
    EXPECT_EQ(p.copied.local, 32);  // K and V, adjacent
    EXPECT_EQ(p.copied.count, 64);
  }
  auto held = column_holders(4, [](std::int64_t t) { return gqa_qkv(128, 4, 2, 32, t, 4); });
  const std::vector<int> queries_once(held.begin(), held.begin() + 4 * 32);
  const std::vector<int> kv_twice(held.begin() + 4 * 32, held.end());
  EXPECT_EQ(queries_once, std::vector<int>(4 * 32, 1));
  EXPECT_EQ(kv_twice, std::vector<int>(4 * 32, 2));
  // One kv head over 8 ranks (multi-query attention): all 8 hold it.
  EXPECT_EQ(gqa_qkv(128, 8, 1, 16, 5, 8).copies, 8);
  EXPECT_EQ(gqa_qkv(128, 8, 1, 16, 5, 8).whole_column(16), 8 * 16);
}

TEST(TpPlacement, WholeTensorIsItsOwnPlace) {
  const TpPlacement p = whole_tensor(32, 8);
  EXPECT_EQ(p.whole_in, 32);
  EXPECT_EQ(p.whole_out, 8);
  EXPECT_EQ(p.row, 0);
  for (std::int64_t j = 0; j < 8; ++j) EXPECT_EQ(p.whole_column(j), j);
}

}  // namespace
}  // namespace fb::workloads::train
