#include "reports/simulate_extra.hpp"

#include "reports/extra_cursor.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

json percentiles_json(const SimulatePercentiles& p) {
  return {{"p5", p.p5}, {"p50", p.p50}, {"p95", p.p95}, {"mean", p.mean}};
}

SimulatePercentiles read_percentiles(const ExtraCursor& c) {
  return {c.at("p5").num(), c.at("p50").num(), c.at("p95").num(), c.at("mean").num()};
}

}  // namespace

void write_simulate_extra(Result& r, const SimulateExtra& x) {
  r.extra["percentiles"] = {{"goodput_pct", percentiles_json(x.goodput_pct)},
                            {"ettr", percentiles_json(x.ettr)},
                            {"failures_mean", percentiles_json(x.failures_mean)},
                            {"wall_h", percentiles_json(x.wall_h)}};
  r.extra["productive_s"] = x.productive_s;
  r.extra["badput_s"] = x.badput_s;
  r.extra["badput_pct"] = x.badput_pct;
  r.extra["failures_by_category"] = x.failures_by_category;
  r.extra["drained_nodes_mean"] = x.drained_nodes_mean;
  if (x.interval_search.empty()) return;
  json searched = json::array();
  for (const auto& [interval, g] : x.interval_search)
    searched.push_back({{"interval_s", interval}, {"goodput_pct", g}});
  r.extra["interval_search"] = searched;
}

SimulateExtra read_simulate_extra(const Result& r) {
  return read_extra(r, [](const ExtraCursor& e) {
    SimulateExtra x;
    const auto p = e.at("percentiles");
    x.goodput_pct = read_percentiles(p.at("goodput_pct"));
    x.ettr = read_percentiles(p.at("ettr"));
    x.failures_mean = read_percentiles(p.at("failures_mean"));
    x.wall_h = read_percentiles(p.at("wall_h"));
    x.productive_s = e.at("productive_s").num();
    x.badput_s = e.at("badput_s").figures();
    x.badput_pct = e.at("badput_pct").figures();
    x.failures_by_category = e.at("failures_by_category").figures();
    x.drained_nodes_mean = e.at("drained_nodes_mean").num();
    if (e.has("interval_search"))
      x.interval_search = e.at("interval_search").each([](const ExtraCursor& s) {
        return std::pair{s.at("interval_s").num(), s.at("goodput_pct").num()};
      });
    return x;
  });
}

}  // namespace fb::reports
