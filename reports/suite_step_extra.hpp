#pragma once
// The suite step tag of any Result (extra.suite_step): the name of the `suite` step that produced it, set
// when a suite collects the step's results (tools/session.cpp, tools/suite_command.cpp) and read by the
// headline summary (reports/headline.cpp) to group results by step.
#include <optional>
#include <string>

#include "reports/report.hpp"

namespace fb::reports {

void write_suite_step(Result& r, const std::string& step);
// The step's name; nullopt when the result has none (not from a suite) or it is not a string.
std::optional<std::string> find_suite_step(const Result& r);

}  // namespace fb::reports
