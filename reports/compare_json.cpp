// A comparison as JSON (schema "factorybench.compare/v1"), for scripts that post-process verdicts.
#include <cmath>

#include <nlohmann/json.hpp>

#include "reports/compare_printers.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? json(*v) : json(nullptr);
}

json side(const CompareSide& s) {
  return json{{"source", s.source}, {"label", s.label}, {"reference", s.reference}};
}

}  // namespace

std::string render_compare_json(const Comparison& c) {
  json counts = json::object();
  const auto n = c.counts();
  for (std::size_t i = 0; i < kVerdictCount; ++i)
    counts[std::string(to_string(static_cast<Verdict>(i)))] = n[i];
  json rows = json::array();
  for (const auto& r : c.rows) {
    json row{{"benchmark", r.benchmark},
             {"result", r.result},
             {"metric", r.metric},
             {"unit", r.unit},
             {"better", to_string(r.better)},
             {"baseline", opt(r.baseline)},
             {"candidate", opt(r.candidate)},
             {"change", opt(r.change)},
             {"ratio", opt(r.ratio)},
             {"noise", opt(r.noise)},
             {"tolerance", r.tolerance},
             {"verdict", to_string(r.verdict)},
             {"reason", r.reason},
             {"fails", r.fails}};
    if (r.abs_tolerance) row["abs_tolerance"] = *r.abs_tolerance;
    if (r.min) row["min"] = *r.min;
    if (r.max) row["max"] = *r.max;
    rows.push_back(std::move(row));
  }
  const json j{{"schema", "factorybench.compare/v1"},
               {"baseline", side(c.baseline)},
               {"candidate", side(c.candidate)},
               {"tolerance", c.tolerance},
               {"fail_on_missing", c.fail_on_missing},
               {"warnings", c.warnings},
               {"summary",
                {{"compared", c.rows.size()},
                 {"counts", counts},
                 {"failures", c.failures()},
                 {"exit_status", c.exit_status()}}},
               {"comparisons", rows}};
  return j.dump(2) + "\n";
}

}  // namespace fb::reports
