#pragma once
// The extra of a "burnin" Result, one per node (workloads/burnin.cpp writes it, reports/burnin_console.cpp
// reads it): each rank's device, GEMMs, throughput and checksums, the problems found and the node's verdict.
#include <cstdint>
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

struct BurninRankExtra {
  int rank = 0, local_rank = 0;
  std::string device;
  std::int64_t gemms = 0;
  double tflops = 0;
  std::vector<std::string> checksums;  // per check, 16 hex digits
  bool operator==(const BurninRankExtra&) const = default;
};

struct BurninProblemExtra {
  int rank = 0, check = 0;
  double first_seen_s = 0;
  std::string reason;
  bool operator==(const BurninProblemExtra&) const = default;
};

struct BurninExtra {
  std::vector<BurninRankExtra> ranks;
  std::vector<BurninProblemExtra> problems;
  std::string verdict;  // "pass", "fail", or "not_finished" (no mismatch in a run stopped early)
  bool operator==(const BurninExtra&) const = default;
};

void write_burnin_extra(Result& r, const BurninExtra& extra);
// Throws an input Error naming the result and the missing or mistyped key.
BurninExtra read_burnin_extra(const Result& r);

}  // namespace fb::reports
