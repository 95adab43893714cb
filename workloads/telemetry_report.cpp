#include "workloads/telemetry_report.hpp"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "core/rank_collectives.hpp"
#include "reports/telemetry_extra.hpp"

namespace fb::workloads {

using nlohmann::json;

namespace {

std::string utc_from_unix(double seconds) {
  const auto whole = static_cast<std::time_t>(seconds);
  const int ms = static_cast<int>((seconds - static_cast<double>(whole)) * 1000.0);
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, ms);
}

json own_summary(const TelemetrySampler& sampler, double from_s, double to_s) {
  json mine = sampler.summary(from_s, to_s);
  // Each rank's own clock: when its t_s = 0 was, so series of different ranks line up.
  mine["started_at"] = utc_from_unix(sampler.start_unix_s());
  return mine;
}

// The gathered shape from the ranks' summaries, each with its "rank" and "hostname".
json assemble(const TelemetrySampler& sampler, std::vector<json> entries) {
  json ranks = json::array();
  std::vector<json> summaries;
  for (auto& s : entries) {
    json lean = s;
    lean.erase("series");
    lean.erase("source");
    lean.erase("started_at");
    lean.erase("rank");
    lean.erase("hostname");
    summaries.push_back(std::move(lean));
    ranks.push_back(std::move(s));
  }
  json combined = combine_telemetry(summaries);
  return {{"mode", to_string(sampler.options().mode)},
          {"interval_ms", sampler.options().interval_s * 1e3},
          {"combined", std::move(combined)},
          {"ranks", std::move(ranks)}};
}

}  // namespace

json gather_telemetry(const MpiContext& mpi, const TelemetrySampler& sampler, double from_s, double to_s) {
  const auto all = gather_to_root(mpi, own_summary(sampler, from_s, to_s).dump());
  if (!mpi.is_root()) return nullptr;
  std::vector<json> entries;
  for (std::size_t r = 0; r < all.size(); ++r) {
    json s = json::parse(all[r]);
    s["rank"] = r;
    s["hostname"] = r < mpi.hostnames().size() ? mpi.hostnames()[r] : std::string();
    entries.push_back(std::move(s));
  }
  return assemble(sampler, std::move(entries));
}

json own_telemetry(const MpiContext& mpi, TelemetrySampler& sampler, double from_s) {
  json mine = own_summary(sampler, from_s, sampler.mark());
  mine["rank"] = mpi.rank();
  mine["hostname"] = mpi.hostname();
  return assemble(sampler, {std::move(mine)});
}

void attach_telemetry(reports::Result& result, const json& gathered) {
  if (gathered.is_null() || reports::has_telemetry_extra(result)) return;
  reports::write_telemetry_extra(result, {gathered["combined"], gathered["mode"].get<std::string>()});
}

void attach_telemetry(reports::Report& report, const json& gathered) {
  if (gathered.is_null()) return;
  for (auto& r : report.results) attach_telemetry(r, gathered);
  if (!report.summary.is_object()) return;
  report.summary["telemetry"] = {
      {"mode", gathered["mode"]}, {"interval_ms", gathered["interval_ms"]}, {"ranks", gathered["ranks"]}};
}

}  // namespace fb::workloads
