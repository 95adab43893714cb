#pragma once
// `factorybench locate`'s console view: the p2p matrices, the slow endpoints and links, the bisection
// rounds and slow nodes, the transport record, then PASS or FAIL. A view of the locate Results (p2p:
// extra.matrix, extra.endpoints and, at the largest size, extra.verdict; bisection: extra.rounds and
// extra.slow_nodes; transport: extra.summary or the error); measuring never formats.
#include <ostream>
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace fb::reports {

void print_locate_report(std::ostream& out, const Report& report);

// The p2p verdict in words, one line per named endpoint or link, or one saying none was found; from the
// p2p Result carrying extra.verdict. Also the text of that Result's error.
std::vector<std::string> p2p_verdict_lines(const Result& r);

// What the hang watchdog found, from the "hang" Result (extra.diagnosis, params.run_dir) of the command
// named by its benchmark (locate, health).
void print_hang(std::ostream& out, const Result& hang);

}  // namespace fb::reports
