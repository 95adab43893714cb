#pragma once
// Telemetry into reports: every rank's summary of a measured window is gathered to rank 0, combined
// across ranks into each Result's extra.telemetry (reports/telemetry_extra.hpp), and kept per rank (with
// the time series under --telemetry full) in the report's summary["telemetry"]. Shapes in docs/health.md.
//
// A workload that wants one window per result (not the whole run) marks its bounds:
//   const double t0 = sampler ? sampler->mark() : 0;
//   ... measure ...
//   if (sampler) attach_telemetry(result, gather_telemetry(mpi, *sampler, t0, sampler->mark()));
// gather_telemetry is collective: every rank calls it (sampler presence is the same on every rank).
// Session::finish attaches the run's window to every result that has none.
#include <nlohmann/json.hpp>

#include "core/mpi_context.hpp"
#include "core/telemetry_sampler.hpp"
#include "reports/report.hpp"

namespace fb::workloads {

// Collective over the world. Rank 0 gets {"mode", "interval_ms", "started_at", "combined": {...},
// "ranks": [{"rank", "hostname", ...summary...}]}; the other ranks get null.
nlohmann::json gather_telemetry(const MpiContext& mpi, const TelemetrySampler& sampler, double from_s,
                                double to_s);

// The same shape with this rank's readings alone, up to a reading taken now (mark()), without a collective:
// what a hang's report can hold, written while the ranks are stuck. Safe from another thread than the one
// that measures.
nlohmann::json own_telemetry(const MpiContext& mpi, TelemetrySampler& sampler, double from_s);

// extra.telemetry = the combined summary (no series) and the mode, unless the result has one already or
// `gathered` is null.
void attach_telemetry(reports::Result& result, const nlohmann::json& gathered);
// attach_telemetry on every result, and report.summary["telemetry"] = the per-rank summaries.
void attach_telemetry(reports::Report& report, const nlohmann::json& gathered);

}  // namespace fb::workloads
