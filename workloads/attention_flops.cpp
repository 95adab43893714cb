#include "workloads/attention_flops.hpp"

namespace fb::workloads {

AttentionFlopCount attention_flops(const kernels::AttentionShape& s) {
  const double seq = static_cast<double>(s.seq), heads = static_cast<double>(s.heads);
  const double dims = static_cast<double>(s.head_dim + s.value_dim);
  const double mask = s.causal ? 0.5 : 1.0;  // Megatron's causal factor (not (s+1)/2s)
  const double forward = static_cast<double>(s.batch) * 2.0 * seq * seq * heads * dims * mask;
  return {forward, 2.0 * forward};
}

}  // namespace fb::workloads
