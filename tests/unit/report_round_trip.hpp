#pragma once
// What a Result looks like after a trip through the report JSON text and back (the typed accessor tests of
// reports/*_extra.cpp read what a report on disk would give them).
#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "reports/report_json.hpp"

namespace fb::reports::testing {

inline Result through_json(const Result& r) {
  Report report;
  report.results = {r};
  return report_from_json(nlohmann::json::parse(to_json(report).dump()), "test").results.at(0);
}

}  // namespace fb::reports::testing
