#include "workloads/train/tp_placement.hpp"

#include "core/error.hpp"

namespace fb::workloads::train {

std::int64_t TpPlacement::whole_column(std::int64_t local) const {
  for (const auto& r : columns)
    if (local >= r.local && local < r.local + r.count) return r.whole + (local - r.local);
  throw runtime_error("TpPlacement: local column outside every run (a bug)");
}

std::int64_t TpPlacement::local_out() const {
  std::int64_t n = 0;
  for (const auto& r : columns) n += r.count;
  return n;
}

ColumnPart even_part(std::int64_t whole, std::int64_t t, std::int64_t tp) {
  const std::int64_t count = whole / tp;
  return {whole, t * count, count};
}

TpPlacement whole_tensor(std::int64_t in, std::int64_t out) {
  return column_parallel(in, {ColumnPart{out, 0, out}});
}

TpPlacement column_parallel(std::int64_t in, const std::vector<ColumnPart>& parts) {
  TpPlacement p;
  p.whole_in = in;
  std::int64_t local = 0;
  for (const auto& part : parts) {
    if (part.count > 0) p.columns.push_back({local, p.whole_out + part.first, part.count});
    local += part.count;
    p.whole_out += part.whole;
  }
  return p;
}

TpPlacement row_parallel(std::int64_t local_in, std::int64_t out, std::int64_t t, std::int64_t tp) {
  TpPlacement p = whole_tensor(local_in * tp, out);
  p.row = t * local_in;
  return p;
}

TpPlacement gqa_qkv(std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                    std::int64_t t, std::int64_t tp) {
  const ColumnPart q = even_part(heads * head_dim, t, tp);
  if (kv_heads >= tp) {
    const ColumnPart kv = even_part(kv_heads * head_dim, t, tp);
    return column_parallel(hidden, {q, kv, kv});
  }
  // Query head j reads kv head j / (heads / kv_heads); rank t's query heads start at t·heads/tp.
  const std::int64_t kv_head = t * kv_heads / tp;
  const ColumnPart kv{kv_heads * head_dim, kv_head * head_dim, head_dim};
  TpPlacement p = column_parallel(hidden, {q, kv, kv});
  p.copied = {q.count, 0, 2 * head_dim};  // K and V of the one kv head, side by side
  p.copies = tp / kv_heads;
  return p;
}

}  // namespace fb::workloads::train
