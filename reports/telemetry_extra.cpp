#include "reports/telemetry_extra.hpp"

#include <cstdint>

namespace fb::reports {

void write_telemetry_extra(Result& r, const TelemetryExtra& x) {
  nlohmann::json t = x.combined;
  t["mode"] = x.mode;
  r.extra["telemetry"] = std::move(t);
}

bool has_telemetry_extra(const Result& r) {
  return r.extra.is_object() && r.extra.contains("telemetry");
}

std::optional<TelemetryWindow> find_telemetry_window(const Result& r) {
  if (!has_telemetry_extra(r)) return std::nullopt;
  const auto& w = r.extra.at("telemetry");
  const auto number = [&](const char* key) -> std::optional<double> {
    if (w.is_object() && w.contains(key) && w.at(key).is_number()) return w.at(key).get<double>();
    return std::nullopt;
  };
  const auto from = number("from_s"), to = number("to_s");
  if (!from || !to) return std::nullopt;
  return TelemetryWindow{*from, *to};
}

std::vector<std::string> slowdown_reason_names(const nlohmann::json& list) {
  std::vector<std::string> out;
  if (list.is_array())
    for (const auto& x : list)
      if (x.is_string() && x.get<std::string>() != "sw_power_cap") out.push_back(x.get<std::string>());
  return out;
}

std::optional<GpuSlowdown> find_gpu_slowdown(const Result& r) {
  if (!has_telemetry_extra(r)) return std::nullopt;
  const auto& t = r.extra.at("telemetry");
  if (!t.is_object() || !t.contains("gpu") || !t.at("gpu").is_object()) return std::nullopt;
  const auto& g = t.at("gpu");
  GpuSlowdown s;
  s.reasons = slowdown_reason_names(g.value("slowdown_reasons", nlohmann::json()));
  if (s.reasons.empty()) return std::nullopt;
  if (g.contains("slowdown_ranks") && g.at("slowdown_ranks").is_array())
    for (const auto& x : g.at("slowdown_ranks"))
      if (x.is_number_integer() && x.get<std::int64_t>() >= 0) s.ranks.push_back(x.get<std::size_t>());
  return s;
}

}  // namespace fb::reports
