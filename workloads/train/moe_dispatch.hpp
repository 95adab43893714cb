#pragma once
// MoE routing and token dispatch across the expert-parallel group: top-k routing of this rank's token slice,
// the permutation into expert order, the exchange of per-expert counts, the all-to-all of token rows to the
// experts' ranks and back (combine), and the backward of each. The expert GEMMs are in moe_layer.cpp.
#include <cstdint>
#include <vector>

#include "workloads/train/sublayer.hpp"

namespace fb::workloads::train {

class MoeDispatch {
 public:
  explicit MoeDispatch(StepContext& c);
  // Routing buffers of one MoE layer and an initial expert capacity (2 · tokens · k rows).
  void allocate(LayerActs& a);
  // Routes x (this rank's Tm token rows; router logits already in a.router_logits) and sends each row to
  // its k experts' EP ranks. Leaves the received rows grouped by local expert in a.expert_in and the row
  // counts in a.expert_rows / a.received.
  void dispatch(LayerActs& a, const void* x);
  // Expert outputs (expert-major, in scratch_b) back to their tokens: y[t] += Σ_j weight · out (Tm rows).
  void combine(LayerActs& a, void* y);
  // Backward of combine from dy (Tm rows): the routing-weight gradient, and the expert-output gradient
  // expert-major in scratch_b.
  void combine_backward(LayerActs& a, const void* dy);
  // Backward of dispatch: the expert-input gradient (expert-major in scratch_a) back to the tokens, summed
  // into dx; the router logits' gradient into router_grad().
  void dispatch_backward(LayerActs& a, void* dx);

  // Expert GEMM scratch, rows in expert order (at least every layer's capacity).
  DeviceBuffer& scratch_a() { return scratch_a_; }
  DeviceBuffer& scratch_b() { return scratch_b_; }
  const DeviceBuffer& router_grad() const { return d_router_; }
  std::int64_t sent_rows() const { return sent_rows_; }
  std::int64_t received_rows() const { return received_rows_; }
  const std::vector<double>& expert_tokens() const { return expert_tokens_; }  // routed to each expert so far

 private:
  void grow(LayerActs& a, std::int64_t rows);
  std::vector<std::int64_t> exchange_counts(const std::vector<std::int64_t>& counts);
  void plan_exchange(LayerActs& a, const std::vector<std::int64_t>& counts);
  void alltoallv(const void* send, const std::vector<std::int64_t>& send_rows, void* recv,
                 const std::vector<std::int64_t>& recv_rows, const char* name);
  void reorder(const LayerActs& a, const void* src, void* dst, bool to_expert);

  StepContext& c_;
  DeviceBuffer perm_, d_weight_, d_router_, router_bias_, counts_dev_, scratch_a_, scratch_b_;
  std::int64_t scratch_rows_ = 0;
  std::int64_t sent_rows_ = 0, received_rows_ = 0;
  std::vector<double> expert_tokens_;
};

}  // namespace fb::workloads::train
