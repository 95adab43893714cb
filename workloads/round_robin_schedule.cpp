#include "workloads/round_robin_schedule.hpp"

#include <algorithm>

namespace fb::workloads {

std::vector<std::vector<Pair>> round_robin_schedule(int n) {
  std::vector<std::vector<Pair>> rounds;
  if (n < 2) return rounds;
  const int m = n % 2 == 0 ? n : n + 1;  // with the phantom endpoint m−1 = n when n is odd
  // Circle method: endpoint m−1 stays fixed, the others rotate one place per round. In round r the fixed
  // endpoint meets r, and (r + i) meets (r − i) for i = 1 .. m/2 − 1 (mod m − 1).
  for (int r = 0; r < m - 1; ++r) {
    std::vector<Pair> pairs;
    auto add = [&](int a, int b) {
      if (a >= n || b >= n) return;  // the phantom: a bye
      pairs.emplace_back(std::min(a, b), std::max(a, b));
    };
    add(m - 1, r);
    for (int i = 1; i < m / 2; ++i) add((r + i) % (m - 1), (r - i + (m - 1)) % (m - 1));
    std::sort(pairs.begin(), pairs.end());
    rounds.push_back(std::move(pairs));
  }
  return rounds;
}

}  // namespace fb::workloads
