#pragma once
// The resilience timeline as a list of spans for the Gantt chart: where the job's wall time went.
// A report may carry it explicitly (summary.timeline or a result's extra.timeline: [{start_s, end_s,
// category}]); otherwise it is derived from the report's events (resilience/event_log.hpp types), with the
// same category names as the goodput ledger: productive, init, ckpt_save, ckpt_restore, wasted, detection,
// relaunch, other. The ledger (resilience/goodput_ledger.hpp) stays the authority for the numbers; this is
// a picture of the same log.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"
#include "reports/svg_chart.hpp"

namespace fb::reports {

struct Timeline {
  std::vector<svg::Span> spans;      // non-overlapping, in time order, seconds since the first event
  std::vector<svg::Marker> markers;  // faults injected, failures detected, drains
};

// Derives spans from one job's events (objects with "type" and "t"); events without a numeric "t" are
// ignored.
Timeline timeline_from_events(const nlohmann::json& events);

// One timeline per job, each from its own first event: a report of several resilience jobs (--policy
// compare, a suite with two resilience steps) logs them one after another, each from its job_start; read as
// one log, the second job's step 1 would roll back (mark wasted) every step of the first.
std::vector<Timeline> job_timelines(const nlohmann::json& events);

// The explicit timeline (summary.timeline), else each result's extra.timeline, else one per job derived from
// report.events; empty when there is none.
std::vector<Timeline> report_timelines(const Report& report);

// The Gantt legend order.
const std::vector<std::string>& timeline_categories();

}  // namespace fb::reports
