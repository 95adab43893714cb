#pragma once
// The round-robin tournament ("circle method"): N endpoints meet pairwise in N−1 rounds of N/2 disjoint
// pairs (N even), so every pair is measured exactly once, O(N) rounds, and no endpoint is in two transfers
// at once. Odd N: a phantom endpoint is added and whoever meets it sits the round out (a bye), N rounds.
// Pure; unit-tested in tests/unit/round_robin_schedule_test.cpp.
#include <utility>
#include <vector>

namespace fb::workloads {

using Pair = std::pair<int, int>;  // first < second

// rounds[r] = the pairs of round r. n < 2 gives no rounds.
std::vector<std::vector<Pair>> round_robin_schedule(int n);

}  // namespace fb::workloads
