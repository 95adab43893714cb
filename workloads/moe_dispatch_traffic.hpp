#pragma once
// Traffic matrices for alltoallv: the expert-parallel dispatch of a mixture-of-experts layer (seeded top-k
// routing) and the fixed uneven pattern of a plain alltoallv sweep. Pure functions: every rank computes
// the same matrix from the same arguments, without communication.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fb::workloads {

// elements[src·ranks + dst]: elements rank src sends to rank dst (the self entry is a local copy).
struct TrafficMatrix {
  int ranks = 0;
  std::vector<std::size_t> elements;

  std::size_t at(int src, int dst) const {
    return elements[static_cast<std::size_t>(src) * static_cast<std::size_t>(ranks) +
                    static_cast<std::size_t>(dst)];
  }
  std::size_t sent(int rank) const;      // row sum
  std::size_t received(int rank) const;  // column sum
  std::size_t total() const;
  // The rank with the most elements sent or received, and that count.
  int busiest_rank() const;
  std::size_t busiest_elements() const;
  // busiest_elements / total: 1/ranks when balanced. 0 for an empty matrix.
  double busiest_share() const;
  TrafficMatrix transposed() const;  // combine = dispatch reversed
  std::vector<std::size_t> send_counts(int rank) const;
  std::vector<std::size_t> recv_counts(int rank) const;
  // 52-bit FNV-1a of the elements: equal on every rank when every rank computed the same matrix.
  std::uint64_t checksum() const;
};

// Prefix sums: displacements of consecutive blocks.
std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts);

struct MoeRouting {
  std::uint64_t tokens = 0;  // tokens per rank (--moe-tokens)
  std::uint64_t hidden = 0;  // elements per token (--hidden)
  int experts = 0;           // routed experts, spread evenly over the ranks (--experts)
  int top_k = 0;             // experts per token (--top-k)
  double skew = 0;           // Zipf exponent of expert popularity (--skew); 0 = uniform
  std::uint64_t seed = 42;
};

// Throws usage Errors naming the option: tokens, hidden, experts, top-k ≥ 1; top-k ≤ experts ≤ 65536; experts
// divisible by `ranks`; skew ≥ 0; a routing table of at most 2e10 draws (tokens × ranks × experts × (top-k +
// 2)).
void validate_moe_routing(const MoeRouting& routing, int ranks);

// Tokens each rank sends to each rank: every token of every rank picks top_k distinct experts (weighted
// sampling without replacement, popularity ∝ 1/(position+1)^skew over a seeded shuffle of the experts) and
// is sent once to every rank that holds one of them (deduplicated per destination rank, as DeepEP counts
// num_tokens_per_rank). Expert e lives on rank e / (experts/ranks).
TrafficMatrix moe_dispatch_tokens(const MoeRouting& routing, int ranks);

// The same matrix in elements (tokens × hidden).
TrafficMatrix scale(const TrafficMatrix& tokens, std::uint64_t elements_per_token);

// The plain alltoallv pattern: rank i sends (1 + (i+j) mod n)·unit elements to rank j. Symmetric (so it
// also runs in place) and uneven per peer, while every rank moves the same total n(n+1)/2·unit, chosen as
// the largest 16-byte-aligned unit that keeps a rank's total within `size_bytes`.
TrafficMatrix uneven_alltoallv(std::uint64_t size_bytes, std::size_t elem_bytes, int ranks);

}  // namespace fb::workloads
