#include "workloads/moe_dispatch_traffic.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/random_fill.hpp"

namespace fb::workloads {

std::size_t TrafficMatrix::sent(int rank) const {
  std::size_t s = 0;
  for (int d = 0; d < ranks; ++d) s += at(rank, d);
  return s;
}

std::size_t TrafficMatrix::received(int rank) const {
  std::size_t s = 0;
  for (int src = 0; src < ranks; ++src) s += at(src, rank);
  return s;
}

std::size_t TrafficMatrix::total() const {
  return std::accumulate(elements.begin(), elements.end(), std::size_t{0});
}

int TrafficMatrix::busiest_rank() const {
  int best = 0;
  std::size_t most = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::size_t load = std::max(sent(r), received(r));
    if (load > most) {
      most = load;
      best = r;
    }
  }
  return best;
}

std::size_t TrafficMatrix::busiest_elements() const {
  if (ranks == 0) return 0;
  const int r = busiest_rank();
  return std::max(sent(r), received(r));
}

double TrafficMatrix::busiest_share() const {
  const std::size_t t = total();
  return t == 0 ? 0.0 : static_cast<double>(busiest_elements()) / static_cast<double>(t);
}

TrafficMatrix TrafficMatrix::transposed() const {
  TrafficMatrix t{ranks, std::vector<std::size_t>(elements.size())};
  const auto n = static_cast<std::size_t>(ranks);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) t.elements[j * n + i] = elements[i * n + j];
  return t;
}

std::vector<std::size_t> TrafficMatrix::send_counts(int rank) const {
  std::vector<std::size_t> c(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) c[static_cast<std::size_t>(d)] = at(rank, d);
  return c;
}

std::vector<std::size_t> TrafficMatrix::recv_counts(int rank) const {
  std::vector<std::size_t> c(static_cast<std::size_t>(ranks));
  for (int s = 0; s < ranks; ++s) c[static_cast<std::size_t>(s)] = at(s, rank);
  return c;
}

std::uint64_t TrafficMatrix::checksum() const {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  };
  mix(static_cast<std::uint64_t>(ranks));
  for (const auto e : elements) mix(e);
  return h & ((std::uint64_t{1} << 52) - 1);  // exact in a double (report per_rank values)
}

std::vector<std::size_t> displacements(const std::vector<std::size_t>& counts) {
  std::vector<std::size_t> d(counts.size());
  std::size_t offset = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    d[i] = offset;
    offset += counts[i];
  }
  return d;
}

void validate_moe_routing(const MoeRouting& r, int ranks) {
  if (r.tokens < 1) throw usage_error("invalid --moe-tokens 0: must be at least 1");
  if (r.hidden < 1) throw usage_error("invalid --hidden 0: must be at least 1");
  if (r.experts < 1)
    throw usage_error("invalid --experts " + std::to_string(r.experts) + ": must be at least 1");
  if (r.top_k < 1 || r.top_k > r.experts)
    throw usage_error("invalid --top-k " + std::to_string(r.top_k) + ": must be between 1 and --experts (" +
                      std::to_string(r.experts) + ")");
  constexpr int kMaxExperts = 1 << 16;  // far beyond any published MoE (DeepSeek-V3: 256 routed experts)
  if (r.experts > kMaxExperts)
    throw usage_error(fmt::format("invalid --experts {}: at most {}", r.experts, kMaxExperts));
  // Every rank builds the whole routing table, a weighted draw over the experts per token and choice: bound
  // the set-up (about 2e8 draws a second on one core), which ran silent for hours at the option limits.
  const double draws = static_cast<double>(r.tokens) * ranks * r.experts * (r.top_k + 2.0);
  constexpr double kMaxDraws = 2e10;
  if (draws > kMaxDraws)
    throw usage_error(fmt::format(
        "invalid --moe-tokens {} with --experts {} and --top-k {} on {} ranks: the routing table takes "
        "{:.2g} "
        "draws (tokens x ranks x experts x (top-k + 2)) to build before the first message, at most {:.0e} (a "
        "minute or two); fewer tokens or experts",
        r.tokens, r.experts, r.top_k, ranks, draws, kMaxDraws));
  if (r.experts % ranks != 0)
    throw usage_error("invalid --experts " + std::to_string(r.experts) + ": must be divisible by the " +
                      std::to_string(ranks) + " ranks of the expert-parallel group");
  if (!(r.skew >= 0) || !std::isfinite(r.skew))
    throw usage_error(fmt::format("invalid --skew {}: must be a finite number >= 0", r.skew));
}

TrafficMatrix moe_dispatch_tokens(const MoeRouting& r, int ranks) {
  validate_moe_routing(r, ranks);
  const auto n = static_cast<std::size_t>(ranks);
  const auto experts = static_cast<std::size_t>(r.experts);
  const std::size_t per_rank = experts / n;

  // Popularity: Zipf over a seeded permutation, so the hot experts do not always sit on rank 0.
  std::vector<std::size_t> order(experts);
  std::iota(order.begin(), order.end(), std::size_t{0});
  SplitMix64 shuffle(derive_seed(r.seed, 0x5e17u));
  for (std::size_t i = experts; i > 1; --i) std::swap(order[i - 1], order[shuffle.next() % i]);
  std::vector<double> weight(experts);
  for (std::size_t pos = 0; pos < experts; ++pos)
    weight[order[pos]] = 1.0 / std::pow(static_cast<double>(pos + 1), r.skew);

  TrafficMatrix m{ranks, std::vector<std::size_t>(n * n, 0)};
  std::vector<double> w(experts);
  std::vector<char> hit(n);
  for (std::size_t src = 0; src < n; ++src) {
    const std::uint64_t rank_seed = derive_seed(r.seed, src + 1);
    for (std::uint64_t t = 0; t < r.tokens; ++t) {
      SplitMix64 rng(derive_seed(rank_seed, t));
      w = weight;
      double remaining = std::accumulate(w.begin(), w.end(), 0.0);
      std::fill(hit.begin(), hit.end(), 0);
      for (int k = 0; k < r.top_k; ++k) {
        // Weighted draw without replacement; the last positive weight absorbs rounding at the end.
        double u = rng.uniform() * remaining;
        std::size_t pick = experts;
        for (std::size_t e = 0; e < experts; ++e) {
          if (w[e] <= 0) continue;
          pick = e;
          if (u < w[e]) break;
          u -= w[e];
        }
        remaining -= w[pick];
        w[pick] = 0;
        hit[pick / per_rank] = 1;
      }
      for (std::size_t d = 0; d < n; ++d) m.elements[src * n + d] += static_cast<std::size_t>(hit[d]);
    }
  }
  return m;
}

TrafficMatrix scale(const TrafficMatrix& tokens, std::uint64_t elements_per_token) {
  TrafficMatrix m = tokens;
  for (auto& e : m.elements) e *= static_cast<std::size_t>(elements_per_token);
  return m;
}

TrafficMatrix uneven_alltoallv(std::uint64_t size_bytes, std::size_t elem_bytes, int ranks) {
  const auto n = static_cast<std::size_t>(ranks);
  const std::size_t units = n * (n + 1) / 2;  // every row is a permutation of 1..n
  const std::size_t align = elem_bytes < 16 ? 16 / elem_bytes : 1;
  const std::size_t unit = static_cast<std::size_t>(size_bytes / elem_bytes / units) / align * align;
  TrafficMatrix m{ranks, std::vector<std::size_t>(n * n)};
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) m.elements[i * n + j] = (1 + (i + j) % n) * unit;
  return m;
}

}  // namespace fb::workloads
