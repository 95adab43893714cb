#pragma once
// `factorybench burnin`'s console view: one line per node (PASS with its ranks, checks and throughput, or
// FAIL naming each rank's problem and when it was first seen), then PASS or FAIL. A view of the
// "burnin/node/<host>" Results and summary.burnin; measuring never formats.
#include <ostream>

#include "reports/report.hpp"

namespace fb::reports {

void print_burnin_report(std::ostream& out, const Report& report);

}  // namespace fb::reports
