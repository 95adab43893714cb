#include "reports/timeline_extra.hpp"

namespace fb::reports {

using nlohmann::json;

std::optional<std::vector<svg::Span>> parse_timeline_spans(const json& j) {
  if (!j.is_array() || j.empty()) return std::nullopt;
  std::vector<svg::Span> spans;
  for (const auto& s : j) {
    if (!s.is_object() || !s.contains("start_s") || !s.contains("end_s") || !s["start_s"].is_number() ||
        !s["end_s"].is_number())
      return std::nullopt;
    spans.push_back({s["start_s"].get<double>(), s["end_s"].get<double>(),
                     s.contains("category") && s["category"].is_string() ? s["category"].get<std::string>()
                                                                         : std::string("other")});
  }
  return spans;
}

json timeline_spans_json(const std::vector<svg::Span>& spans) {
  json out = json::array();
  for (const auto& s : spans)
    out.push_back({{"start_s", s.start_s}, {"end_s", s.end_s}, {"category", s.category}});
  return out;
}

void write_timeline_extra(Result& r, const std::vector<svg::Span>& spans) {
  r.extra["timeline"] = timeline_spans_json(spans);
}

std::optional<std::vector<svg::Span>> find_timeline_extra(const Result& r) {
  if (!r.extra.is_object() || !r.extra.contains("timeline")) return std::nullopt;
  return parse_timeline_spans(r.extra.at("timeline"));
}

}  // namespace fb::reports
