#pragma once
// The cluster simulator's console tables: one row per scenario (job MTBF, failures, checkpoint interval,
// goodput and its spread, ETTR, the analytic figure), the time to train for a fixed amount of work, and the
// badput by part. Reads the report only. `time_parts` names the wall-time parts in print order, the first
// being productive time (the simulator's kTimeSplitNames).
#include <ostream>
#include <span>
#include <string_view>

#include "reports/report.hpp"

namespace fb::reports {

void print_simulation(std::ostream& out, const Report& report, std::span<const std::string_view> time_parts);

}  // namespace fb::reports
