#include "reports/suite_step_extra.hpp"

namespace fb::reports {

void write_suite_step(Result& r, const std::string& step) {
  r.extra["suite_step"] = step;
}

std::optional<std::string> find_suite_step(const Result& r) {
  if (!r.extra.is_object()) return std::nullopt;
  const auto it = r.extra.find("suite_step");
  if (it == r.extra.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace fb::reports
