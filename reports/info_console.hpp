#pragma once
// The `info` console summary: the run, the host, each rank's device and the peaks. Reads the report only;
// `version_line` (the tool and library versions) is printed first.
#include <ostream>
#include <string_view>

#include "reports/report.hpp"

namespace fb::reports {

void print_info(std::ostream& out, const Report& report, std::string_view version_line);

}  // namespace fb::reports
