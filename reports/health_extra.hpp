#pragma once
// The extra of a "health" Result, one per check and rank (workloads/health_report.cpp writes it, and reads
// it back when the supervisor's pre-flight reads a health report): the check's verdict (pass, warn, fail,
// skip) and its reason. A report from disk may lack either: the reader falls back on the status and error.
#include <optional>
#include <string>

#include "reports/report.hpp"

namespace fb::reports {

struct HealthExtra {
  std::optional<std::string> verdict;  // workloads::Verdict by name
  std::optional<std::string> reason;
  bool operator==(const HealthExtra&) const = default;
};

// Writes the fields that are set.
void write_health_extra(Result& r, const HealthExtra& extra);
// The fields present; throws an input Error naming the result when one is not a string.
HealthExtra read_health_extra(const Result& r);

}  // namespace fb::reports
