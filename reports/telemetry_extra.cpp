#include "reports/telemetry_extra.hpp"

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

}  // namespace fb::reports
