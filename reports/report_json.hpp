#pragma once
// The report as JSON: write (atomically) and read back, with errors that name the file and the JSON path.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace fb::reports {

nlohmann::json to_json(const Report& report);
// Throws an input Error "SOURCE: $.results[3].metrics.tflops.value: expected a number" on bad content.
Report report_from_json(const nlohmann::json& j, const std::string& source);

// Pretty JSON, temporary file + fsync + rename: a reader never sees half a report.
void write_report(const std::filesystem::path& path, const Report& report);
// The same from a report that is not needed after: its events are moved into the JSON, not copied.
void write_report(const std::filesystem::path& path, Report&& report);
// The same keeping the report: its events are lent to the JSON for the write and moved back after, also
// when the write throws (a resilience report holds one per step: a copy doubled the memory of a long job).
void write_report_lending_events(const std::filesystem::path& path, Report& report);
Report read_report(const std::filesystem::path& path);

}  // namespace fb::reports
