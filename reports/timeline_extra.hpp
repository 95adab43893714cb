#pragma once
// An explicit resilience timeline as a report may carry it (reports/timeline.hpp): a list of spans
// [{start_s, end_s, category}] in the report's summary.timeline or in a result's extra.timeline. Nothing in
// factorybench writes one today (the timeline is derived from the events); reports from elsewhere may.
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "reports/svg_chart.hpp"

namespace fb::reports {

// The spans; nullopt unless `j` is a non-empty list of objects with numeric start_s and end_s (a span
// without a string category is "other").
std::optional<std::vector<svg::Span>> parse_timeline_spans(const nlohmann::json& j);
nlohmann::json timeline_spans_json(const std::vector<svg::Span>& spans);

void write_timeline_extra(Result& r, const std::vector<svg::Span>& spans);
// parse_timeline_spans of extra.timeline; nullopt without one.
std::optional<std::vector<svg::Span>> find_timeline_extra(const Result& r);

}  // namespace fb::reports
