#include "workloads/train/moe_dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fb::workloads::train {

MoeDispatch::MoeDispatch(StepContext& c) : c_(c) {
  const auto& moe = *c.m.moe;
  const std::int64_t slots = c.l.moe_tokens * moe.top_k;
  perm_ = c.act(slots * c.m.hidden);
  d_weight_ = c.alloc(slots, 4);
  d_router_ = c.act(c.l.moe_tokens * moe.experts);
  // --routing-skew s: router bias −s·ln(1 + e) makes low-numbered experts popular (docs/train.md).
  std::vector<float> bias(static_cast<std::size_t>(moe.experts));
  for (std::size_t e = 0; e < bias.size(); ++e)
    bias[e] = static_cast<float>(-c.o.routing_skew * std::log1p(static_cast<double>(e)));
  router_bias_ = c.alloc(moe.experts, 4);
  c.backend.copy_to_device(router_bias_, bias.data(), bias.size() * 4);
  counts_dev_ = c.alloc(2 * c.o.parallel.ep * c.l.local_experts, 4);
  expert_tokens_.assign(static_cast<std::size_t>(moe.experts), 0.0);
}

void MoeDispatch::allocate(LayerActs& a) {
  const std::int64_t Tm = c_.l.moe_tokens, k = c_.m.moe->top_k;
  a.router_logits = c_.act(Tm * c_.m.moe->experts);
  a.idx = c_.alloc(Tm * k, 4);
  a.weight = c_.alloc(Tm * k, 4);
  a.row_of_slot = c_.alloc(Tm * k, 4);
  a.counts = c_.alloc(c_.m.moe->experts, 8);
  a.comb = c_.act(Tm * k * c_.m.hidden);
  grow(a, 2 * Tm * k);
}

// (Re)sizes a layer's expert buffers and the shared scratch to hold `rows` routed rows.
void MoeDispatch::grow(LayerActs& a, std::int64_t rows) {
  const std::int64_t h = c_.m.hidden, up = c_.swiglu() ? 2 : 1, f = c_.l.expert_ffn;
  if (rows > a.capacity) {
    a.capacity = rows + rows / 4;
    a.expert_in = c_.act(a.capacity * h);
    a.e_up = c_.act(a.capacity * up * f);
    a.e_act = c_.act(a.capacity * f);
  }
  if (a.capacity > scratch_rows_) {
    scratch_rows_ = a.capacity;
    const std::int64_t w = std::max(h, up * f);
    scratch_a_ = c_.act(scratch_rows_ * w);
    scratch_b_ = c_.act(scratch_rows_ * w);
  }
}

// Every rank tells each EP peer how many of its rows go to each of the peer's local experts.
std::vector<std::int64_t> MoeDispatch::exchange_counts(const std::vector<std::int64_t>& counts) {
  const std::int64_t ep = c_.o.parallel.ep, El = c_.l.local_experts;
  std::vector<std::int32_t> send(static_cast<std::size_t>(ep * El)), recv(send.size());
  for (std::size_t e = 0; e < counts.size(); ++e) send[e] = static_cast<std::int32_t>(counts[e]);
  if (ep == 1) {
    recv = send;
  } else {
    c_.mark(kEpComm);
    c_.backend.copy_to_device(counts_dev_, send.data(), send.size() * 4);
    c_.groups.ep->alltoall(counts_dev_.data(), static_cast<char*>(counts_dev_.data()) + send.size() * 4,
                           static_cast<std::size_t>(El), DType::int32);
    c_.count_collective("ep_alltoall/counts", static_cast<double>(send.size() * 4));
    c_.backend.copy_to_host(recv.data(), counts_dev_, recv.size() * 4, send.size() * 4);
  }
  return {recv.begin(), recv.end()};
}

// Rows per (peer, local expert) to and from every EP peer.
void MoeDispatch::plan_exchange(LayerActs& a, const std::vector<std::int64_t>& counts) {
  const std::int64_t E = c_.m.moe->experts, El = c_.l.local_experts, ep = c_.o.parallel.ep;
  a.send_rows.assign(static_cast<std::size_t>(ep), 0);
  for (std::int64_t e = 0; e < E; ++e) a.send_rows[e / El] += counts[e];
  a.recv_matrix = exchange_counts(counts);
  a.recv_rows.assign(static_cast<std::size_t>(ep), 0);
  a.expert_rows.assign(static_cast<std::size_t>(El), 0);
  for (std::int64_t s = 0; s < ep; ++s)
    for (std::int64_t e = 0; e < El; ++e) {
      a.recv_rows[s] += a.recv_matrix[s * El + e];
      a.expert_rows[e] += a.recv_matrix[s * El + e];
    }
  a.received = std::accumulate(a.recv_rows.begin(), a.recv_rows.end(), std::int64_t{0});
}

void MoeDispatch::dispatch(LayerActs& a, const void* x) {
  const std::int64_t h = c_.m.hidden, Tm = c_.l.moe_tokens, k = c_.m.moe->top_k, E = c_.m.moe->experts;
  c_.mark(kMoeRouting);
  c_.k->route_topk(a.router_logits.data(), c_.dt, Tm, E, k, router_bias_.as<float>(),
                   a.idx.as<std::int32_t>(), a.weight.as<float>());
  std::vector<std::int64_t> counts(static_cast<std::size_t>(E));
  c_.k->build_permutation(a.idx.as<std::int32_t>(), Tm * k, E, a.counts.as<std::int64_t>(),
                          a.row_of_slot.as<std::int32_t>(), counts.data());
  c_.k->permute(x, c_.dt, Tm, k, h, a.row_of_slot.as<std::int32_t>(), nullptr, perm_.data());
  plan_exchange(a, counts);
  if (!c_.recomputing) {  // a recomputed forward routes the same tokens again
    for (std::int64_t e = 0; e < E; ++e) expert_tokens_[e] += static_cast<double>(counts[e]);
    sent_rows_ += Tm * k;
    received_rows_ += a.received;
  }
  grow(a, a.received);
  alltoallv(perm_.data(), a.send_rows, scratch_a_.data(), a.recv_rows, "ep_alltoallv/dispatch");
  c_.mark(kMoeRouting);
  reorder(a, scratch_a_.data(), a.expert_in.data(), true);
}

void MoeDispatch::combine(LayerActs& a, void* y) {
  const std::int64_t h = c_.m.hidden, Tm = c_.l.moe_tokens, k = c_.m.moe->top_k;
  c_.mark(kMoeRouting);
  reorder(a, scratch_b_.data(), scratch_a_.data(), false);
  alltoallv(scratch_a_.data(), a.recv_rows, a.comb.data(), a.send_rows, "ep_alltoallv/combine");
  c_.mark(kMoeRouting);
  c_.k->unpermute(a.comb.data(), c_.dt, Tm, k, h, a.row_of_slot.as<std::int32_t>(), a.weight.as<float>(), y,
                  true);
}

void MoeDispatch::combine_backward(LayerActs& a, const void* dy) {
  const std::int64_t h = c_.m.hidden, Tm = c_.l.moe_tokens, k = c_.m.moe->top_k;
  c_.mark(kMoeRouting);
  c_.k->routing_weight_grad(dy, a.comb.data(), c_.dt, Tm, k, h, a.row_of_slot.as<std::int32_t>(),
                            d_weight_.as<float>());
  c_.k->permute(dy, c_.dt, Tm, k, h, a.row_of_slot.as<std::int32_t>(), a.weight.as<float>(), perm_.data());
  alltoallv(perm_.data(), a.send_rows, scratch_a_.data(), a.recv_rows, "ep_alltoallv/combine_grad");
  c_.mark(kMoeRouting);
  reorder(a, scratch_a_.data(), scratch_b_.data(), true);
}

void MoeDispatch::dispatch_backward(LayerActs& a, void* dx) {
  const std::int64_t h = c_.m.hidden, Tm = c_.l.moe_tokens, k = c_.m.moe->top_k, E = c_.m.moe->experts;
  c_.mark(kMoeRouting);
  reorder(a, scratch_a_.data(), scratch_b_.data(), false);
  alltoallv(scratch_b_.data(), a.recv_rows, perm_.data(), a.send_rows, "ep_alltoallv/dispatch_grad");
  c_.mark(kMoeRouting);
  c_.k->unpermute(perm_.data(), c_.dt, Tm, k, h, a.row_of_slot.as<std::int32_t>(), nullptr, dx, true);
  c_.k->topk_softmax_backward(a.idx.as<std::int32_t>(), a.weight.as<float>(), d_weight_.as<float>(), Tm, E, k,
                              d_router_.data(), c_.dt);
}

void MoeDispatch::alltoallv(const void* send, const std::vector<std::int64_t>& send_rows, void* recv,
                            const std::vector<std::int64_t>& recv_rows, const char* name) {
  const std::int64_t h = c_.m.hidden;
  c_.mark(kEpComm);
  if (c_.o.parallel.ep == 1) {
    c_.copy(recv, send, send_rows[0] * h);
    return;
  }
  std::vector<std::size_t> sc(send_rows.size()), sd(send_rows.size()), rc(recv_rows.size()),
      rd(recv_rows.size());
  std::size_t so = 0, ro = 0;
  for (std::size_t p = 0; p < send_rows.size(); ++p) {
    sc[p] = static_cast<std::size_t>(send_rows[p] * h);
    sd[p] = so;
    so += sc[p];
    rc[p] = static_cast<std::size_t>(recv_rows[p] * h);
    rd[p] = ro;
    ro += rc[p];
  }
  c_.groups.ep->alltoallv(send, sc, sd, recv, rc, rd, c_.dt);
  c_.count_collective(name, static_cast<double>(so * c_.e));
}

// Received rows are grouped by source peer, then local expert; the expert GEMMs need them grouped by
// expert. to_expert = true: peer-major → expert-major; false: back.
void MoeDispatch::reorder(const LayerActs& a, const void* src, void* dst, bool to_expert) {
  const std::int64_t ep = c_.o.parallel.ep, El = c_.l.local_experts;
  std::vector<std::int64_t> peer_major(static_cast<std::size_t>(ep * El)), expert_major(peer_major.size());
  std::int64_t off = 0;
  for (std::int64_t s = 0; s < ep; ++s)
    for (std::int64_t e = 0; e < El; ++e) {
      peer_major[s * El + e] = off;
      off += a.recv_matrix[s * El + e];
    }
  off = 0;
  for (std::int64_t e = 0; e < El; ++e)
    for (std::int64_t s = 0; s < ep; ++s) {
      expert_major[s * El + e] = off;
      off += a.recv_matrix[s * El + e];
    }
  c_.k->copy_row_blocks(src, dst, c_.dt, c_.m.hidden, ep * El,
                        to_expert ? peer_major.data() : expert_major.data(),
                        to_expert ? expert_major.data() : peer_major.data(), a.recv_matrix.data());
}

}  // namespace fb::workloads::train
