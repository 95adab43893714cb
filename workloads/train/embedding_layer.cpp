#include "workloads/train/embedding_layer.hpp"

#include <vector>

#include "core/random_fill.hpp"

namespace fb::workloads::train {

EmbeddingLayer::EmbeddingLayer(StepContext& c, Region& dense, std::int64_t table)
    : c_(c), dense_(dense), table_(table) {
  // Token ids uniform over the vocabulary, seeded by the data-parallel rank (TP ranks of a group share the
  // data, as they share a micro-batch).
  std::vector<std::int32_t> ids(static_cast<std::size_t>(c.l.tokens));
  SplitMix64 rng(derive_seed(c.o.seed, static_cast<std::uint64_t>(77 + c.coords.d)));
  for (auto& id : ids) id = static_cast<std::int32_t>(rng.next() % static_cast<std::uint64_t>(c.m.vocab));
  ids_ = c.alloc(c.l.tokens, 4);
  c.backend.copy_to_device(ids_, ids.data(), ids.size() * 4);
}

void EmbeddingLayer::forward(void* x) {
  c_.mark(kElementwise);
  const std::int64_t rows = c_.l.vocab;  // this TP rank's vocabulary rows [t·rows, (t+1)·rows)
  // Every token's partial lookup (T rows), summed over TP into x: in place, or with sequence parallelism
  // reduce-scattered from the workspace into x, which holds this rank's rows only.
  void* full = c_.sp ? c_.ws.tmp.data() : x;
  c_.k->embedding_forward(weight(c_, dense_, table_), c_.dt, c_.coords.t * rows, rows, c_.m.hidden,
                          ids_.as<std::int32_t>(), c_.l.tokens, full);
  c_.tp_reduce(full, "embedding", x);
}

void EmbeddingLayer::backward(void* g) {
  c_.tp_gather(g, "embedding_grad");
  c_.mark(kElementwise);
  const std::int64_t rows = c_.l.vocab;
  c_.k->embedding_backward(g, c_.dt, c_.coords.t * rows, rows, c_.m.hidden, ids_.as<std::int32_t>(),
                           c_.l.tokens, weight_grad(c_, dense_, table_));
}

}  // namespace fb::workloads::train
