#pragma once
// The telemetry of any Result (extra.telemetry): the summary of the result's measured window combined over
// the ranks (core/telemetry_sampler.hpp's combine_telemetry: from_s, to_s and the GPU and host figures;
// docs/health.md) and the sampling mode. Written by workloads/telemetry_report.cpp; the HTML report reads
// the window's bounds to draw the benchmark timeline.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

struct TelemetryExtra {
  nlohmann::json combined = nlohmann::json::object();  // combine_telemetry's summary, kept as it is
  std::string mode;                                    // --telemetry's mode
  bool operator==(const TelemetryExtra&) const = default;
};

void write_telemetry_extra(Result& r, const TelemetryExtra& extra);
bool has_telemetry_extra(const Result& r);

// The window's bounds, seconds on rank 0's sampler clock; nullopt unless both are numbers.
struct TelemetryWindow {
  double from_s = 0, to_s = 0;
  bool operator==(const TelemetryWindow&) const = default;
};
std::optional<TelemetryWindow> find_telemetry_window(const Result& r);

// The names telemetry's "slowdown_reasons" may hold, as a reader takes them: all but power capping
// (sw_power_cap), which is the board holding its budget, not a slowdown (docs/reports.md), even in a report
// written by hand that lists it.
std::vector<std::string> slowdown_reason_names(const nlohmann::json& list);

// A GPU slowdown (hw_slowdown, sw/hw thermal, hw power brake: telemetry's "slowdown_reasons") during the
// result's window, from extra.telemetry.gpu; nullopt when none was seen (or there was no GPU telemetry).
struct GpuSlowdown {
  std::vector<std::string> reasons;
  std::vector<std::size_t> ranks;  // gpu.slowdown_ranks; empty when the report does not say
};
std::optional<GpuSlowdown> find_gpu_slowdown(const Result& r);

}  // namespace fb::reports
