#pragma once
// `factorybench health`'s console view: one line per rank (a pass names the key figures; a warn or fail
// the reasons), then the tally. A view of summary.health.ranks and the "<check>/rank<R>" Results' metrics;
// checking never formats.
#include <ostream>

#include "reports/report.hpp"

namespace fb::reports {

void print_health_report(std::ostream& out, const Report& report);

}  // namespace fb::reports
