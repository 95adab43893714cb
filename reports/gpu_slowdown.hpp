#pragma once
// GPU slowdowns a report's telemetry saw (reasons and ranks) and the warning lines the Markdown, HTML and
// summary printers show for them: a throttled GPU's figures are not the hardware's best, and the JSON alone
// said so.
#include <string>
#include <vector>

#include "reports/report.hpp"
#include "reports/telemetry_extra.hpp"

namespace fb::reports {

// "hw_thermal_slowdown, sw_thermal_slowdown (ranks 1, 3)".
std::string slowdown_text(const GpuSlowdown& s);
// One line per result that saw a slowdown ("GPU slowdown during gemm/bf16/...: hw_thermal_slowdown (rank
// 3)"), then, per rank, what the run's (or a suite step's) summary.telemetry saw that no result names.
// Empty when the telemetry saw none (or there was none: --telemetry off, no GPU).
std::vector<std::string> slowdown_warnings(const Report& report);

}  // namespace fb::reports
