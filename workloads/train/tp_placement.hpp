#pragma once
// Where a tensor-parallel rank's block of a weight lies in the whole tensor, the one a run without tensor
// parallelism holds (Megatron-LM's split: column-parallel QKV, MLP up projections, output layer and
// vocabulary-parallel embedding; row-parallel attention output and MLP down projections). The step seeds
// every weight by its place in the whole tensor, so each --tp trains the same model (docs/train.md).
#include <cstdint>
#include <vector>

namespace fb::workloads::train {

struct TpPlacement {
  // `count` consecutive local columns from `local` are the whole tensor's columns from `whole`.
  struct Run {
    std::int64_t local = 0, whole = 0, count = 0;
  };
  std::int64_t whole_in = 0, whole_out = 0;  // the whole tensor's rows (inputs) and columns (outputs)
  std::int64_t row = 0;                      // the block's first row in the whole tensor (row-parallel)
  std::vector<Run> columns;                  // the block's columns, in runs covering every local column
  // Local columns that `copies` TP ranks hold alike: the kv heads when there are fewer than TP ranks
  // (each rank holds the one its query heads read; their gradients are summed over those ranks).
  Run copied;
  std::int64_t copies = 1;

  // The whole tensor's column of local column `local` (which must lie in a run).
  std::int64_t whole_column(std::int64_t local) const;
  std::int64_t local_out() const;  // columns the block holds
};

// One part of a column-parallel tensor whose parts lie side by side (fused QKV: Q, K, V; SwiGLU: gate, up):
// `whole` columns in the model, of which this rank holds `count` from column `first` of the part.
struct ColumnPart {
  std::int64_t whole = 0, first = 0, count = 0;
};
// Part of `whole` columns split evenly over `tp` ranks (tp divides whole): rank t's t-th slice.
ColumnPart even_part(std::int64_t whole, std::int64_t t, std::int64_t tp);

// A tensor every rank holds whole (norm gains, MoE router and experts, MLA down projections, tp = 1).
TpPlacement whole_tensor(std::int64_t in, std::int64_t out);
// in × (Σ part widths), this rank's columns of each part side by side in part order.
TpPlacement column_parallel(std::int64_t in, const std::vector<ColumnPart>& parts);
// (local_in · tp) × out, this rank's local_in rows from t·local_in.
TpPlacement row_parallel(std::int64_t local_in, std::int64_t out, std::int64_t t, std::int64_t tp);
// Grouped-query attention's fused QKV (hidden × [Q | K | V], heads and kv_heads of head_dim): the query
// heads split evenly; the kv heads too when tp divides them, else each rank holds kv head t·kv_heads/tp,
// shared with the tp/kv_heads ranks whose query heads read it (`copied`, `copies`).
TpPlacement gqa_qkv(std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                    std::int64_t t, std::int64_t tp);

}  // namespace fb::workloads::train
