#pragma once
// What a Result looks like after a trip through the report JSON text and back (the typed accessor tests of
// reports/*_extra.cpp read what a report on disk would give them).
#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "reports/report_json.hpp"

namespace fb::reports::testing {

// A result without a benchmark or name (the accessor tests set only what they test) gets placeholders: a
// report requires both.
inline Result through_json(const Result& r) {
  Report report;
  report.results = {r};
  auto& named = report.results.front();
  if (named.benchmark.empty()) named.benchmark = "test";
  if (named.name.empty()) named.name = "result";
  auto back = report_from_json(nlohmann::json::parse(to_json(report).dump()), "test").results.at(0);
  back.benchmark = r.benchmark;
  back.name = r.name;
  return back;
}

}  // namespace fb::reports::testing
