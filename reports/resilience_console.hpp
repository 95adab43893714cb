#pragma once
// The resilience run's console summary: steps, failures and restarts, goodput, ETTR, MTTF, MTTR, where the
// wall time went, each failure, checkpoints, pre-flight checks, drains and the MTTF split at the first drain;
// with --policy compare, the drain-vs-none line from the summary. Reads the report only. `time_parts` names
// the ledger's wall-time parts in print order (resilience's kWallTimeParts).
#include <ostream>
#include <span>
#include <string_view>

#include "reports/report.hpp"

namespace fb::reports {

void print_resilience_result(std::ostream& out, const Result& r,
                             std::span<const std::string_view> time_parts);

// Every result, then the comparison when the summary has one.
void print_resilience(std::ostream& out, const Report& report, std::span<const std::string_view> time_parts);

}  // namespace fb::reports
