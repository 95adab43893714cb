#include "reports/simulate_charts.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reports/json_fields.hpp"
#include "reports/report_view.hpp"
#include "reports/simulate_extra.hpp"

namespace fb::reports {
namespace {

// The simulator's badput parts in the order its console prints them (resilience/cluster_simulator.hpp
// kTimeSplitNames after "productive"); a part not listed here is stacked after them.
constexpr std::array<const char*, 7> kBadputOrder{"checkpoint", "redone",     "detection", "relaunch",
                                                  "restore",    "spare_wait", "straggler"};

std::optional<double> metric_value(const Result& r, const char* name) {
  const Metric* m = r.metric(name);
  if (!m || !std::isfinite(m->value)) return std::nullopt;
  return m->value;
}

struct Row {
  const Result* r = nullptr;
  double gpus = 0, interval_s = 0, goodput = 0;
  std::string group;  // the failure model and interval policy: "llama3-h100/daly", "x/fixed-1800s"
  std::optional<SimulateExtra> extra;
};

std::vector<Row> rows_of(const std::vector<const Result*>& results) {
  std::vector<Row> rows;
  for (const Result* r : results) {
    if (r->benchmark != "simulate") continue;
    const auto gpus = number_at(r->params, "gpus");
    const auto interval = metric_value(*r, "interval_s");
    const auto goodput = metric_value(*r, "goodput_pct");
    if (!gpus || !interval || !goodput) continue;  // failed, or not a simulate result as written
    Row row{r, *gpus, *interval, *goodput, {}, {}};
    // Names are MODEL/NgpusPOLICY: the group is the name without its GPU count.
    const auto first = r->name.find('/'), last = r->name.rfind('/');
    row.group = first != last ? r->name.substr(0, first) + r->name.substr(last) : r->name;
    try {
      row.extra = read_simulate_extra(*r);
    } catch (const std::exception&) {  // hand-edited: its spread and badput stay out of the charts
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string title_prefix(const std::string& prefix) {
  return prefix.empty() ? "" : prefix + ": ";
}
std::string id_prefix(const std::string& prefix) {
  return prefix.empty() ? "" : prefix + "-";
}

// The spread and the closed forms beside one group's simulated means, against x(row).
template <typename X>
void add_series(svg::LineChart& chart, const std::vector<const Row*>& group, X x, const std::string& name) {
  svg::Series mean{name, {}}, p5{"p5 over trials", {}, true}, p95{"p95 over trials", {}, true},
      daly{"Daly's exponential model", {}, true}, young{"first order (Young)", {}, true};
  for (const Row* row : group) {
    mean.points.push_back({x(*row), row->goodput});
    if (row->extra) {
      p5.points.push_back({x(*row), row->extra->goodput_pct.p5});
      p95.points.push_back({x(*row), row->extra->goodput_pct.p95});
    }
    if (const auto v = metric_value(*row->r, "exponential_goodput_pct")) daly.points.push_back({x(*row), *v});
    if (const auto v = metric_value(*row->r, "analytic_goodput_pct")) young.points.push_back({x(*row), *v});
  }
  for (auto* s : {&mean, &p5, &p95, &daly, &young})
    if (!s->points.empty()) chart.series.push_back(std::move(*s));
}

std::vector<SimulateChart> scale_chart(const std::vector<Row>& rows, const std::string& prefix) {
  std::map<std::string, std::vector<const Row*>> groups;
  std::vector<std::string> order;
  for (const auto& row : rows) {
    if (!groups.count(row.group)) order.push_back(row.group);
    groups[row.group].push_back(&row);
  }
  std::vector<std::string> swept;  // groups with two GPU counts or more
  for (const auto& g : order) {
    std::set<double> counts;
    for (const Row* row : groups[g]) counts.insert(row->gpus);
    if (counts.size() >= 2 && counts.size() == groups[g].size()) swept.push_back(g);
  }
  if (swept.empty()) return {};
  svg::LineChart chart;
  chart.title = title_prefix(prefix) + "Goodput against the job's GPU count";
  chart.x_label = "GPUs in the job (log scale)";
  chart.y_label = "goodput (% of wall time)";
  chart.x_axis = svg::XAxis::log2_count;
  const auto gpus = [](const Row& row) { return row.gpus; };
  std::string caption;
  if (swept.size() == 1) {
    add_series(chart, groups[swept[0]], gpus, "simulated (mean over trials)");
    caption = fmt::format(
        "{}: the simulated goodput (mean, p5 and p95 over trials) at each size, beside Daly's exponential "
        "model and Young's first-order formula at the same interval; the two closed forms part where the "
        "restart is a sizeable share of the MTBF, and at one constant failure rate the exponential model "
        "(with the asynchronous write, if any) is the simulation's own answer",
        swept[0]);
  } else {
    const auto labels = distinct_labels(swept).labels;
    for (std::size_t i = 0; i < swept.size(); ++i) {
      svg::Series s{labels[i], {}};
      for (const Row* row : groups[swept[i]]) s.points.push_back({row->gpus, row->goodput});
      chart.series.push_back(std::move(s));
    }
    caption = fmt::format(
        "Simulated goodput (mean over trials) at each size, one line per failure model and "
        "interval policy ({})",
        fmt::join(swept, ", "));
  }
  return {{id_prefix(prefix) + "simulate-scale", caption, std::move(chart)}};
}

std::vector<SimulateChart> interval_chart(const std::vector<Row>& rows, const std::string& prefix) {
  svg::LineChart chart;
  chart.title = title_prefix(prefix) + "Goodput against the checkpoint interval";
  chart.x_label = "checkpoint interval (minutes of compute between saves)";
  chart.y_label = "goodput (% of wall time)";
  const auto minutes = [](const Row& row) { return row.interval_s / 60; };
  std::string caption;
  // A --sweep-interval: results of one model and size at two fixed intervals or more.
  std::map<std::pair<std::string, double>, std::vector<const Row*>> at_size;
  for (const auto& row : rows) {
    const auto slash = row.group.find('/');
    // Fixed intervals only: a policy's own choice beside them (daly at 73 min, fixed at 30) is no sweep.
    if (row.group.compare(slash + 1, 6, "fixed-") == 0)
      at_size[{row.group.substr(0, slash), row.gpus}].push_back(&row);
  }
  for (auto& [key, group] : at_size) {
    std::set<double> intervals;
    for (const Row* row : group) intervals.insert(row->interval_s);
    if (intervals.size() < 2 || intervals.size() != group.size()) continue;
    add_series(chart, group, minutes, "simulated (mean over trials)");
    caption = fmt::format(
        "{} at {} GPUs: the simulated goodput at each interval (mean, p5, p95 over trials), "
        "beside Daly's exponential model and Young's first-order formula",
        key.first, key.second);
    break;  // one sweep per chart: a second would repeat the closed forms' names
  }
  // --checkpoint-interval auto: the grid each result searched, on trials of its own.
  std::vector<const Row*> searched;
  for (const auto& row : rows)
    if (row.extra && !row.extra->interval_search.empty()) searched.push_back(&row);
  if (chart.series.empty() && !searched.empty()) {
    std::vector<std::string> names;
    for (const Row* row : searched) names.push_back(row->r->name);
    const auto labels = distinct_labels(names).labels;
    svg::Series chosen{"chosen interval (the reported run)", {}, false, true};
    for (std::size_t i = 0; i < searched.size(); ++i) {
      svg::Series s{searched.size() == 1 ? "searched (trials of its own)" : labels[i] + ", searched", {}};
      for (const auto& [interval_s, goodput] : searched[i]->extra->interval_search)
        s.points.push_back({interval_s / 60, goodput});
      chart.series.push_back(std::move(s));
      chosen.points.push_back({minutes(*searched[i]), searched[i]->goodput});
    }
    chart.series.push_back(std::move(chosen));
    caption = fmt::format(
        "The intervals --checkpoint-interval auto tried and their simulated goodput, on trials drawn apart "
        "from "
        "the reported run's, and the interval it chose with the reported run's goodput ({})",
        fmt::join(names, ", "));
  }
  if (chart.series.empty()) return {};
  return {{id_prefix(prefix) + "simulate-interval", caption, std::move(chart)}};
}

std::vector<SimulateChart> badput_chart(const std::vector<Row>& rows, const std::string& prefix) {
  std::vector<const Row*> drawn;
  for (const auto& row : rows)
    if (row.extra) drawn.push_back(&row);
  if (drawn.empty()) return {};
  svg::StackedBarChart chart;
  chart.title = title_prefix(prefix) + "Simulated wall time: goodput and badput";
  chart.y_label = "% of wall time (mean over trials)";
  std::vector<std::string> names;
  for (const Row* row : drawn) names.push_back(row->r->name);
  const auto distinct = distinct_labels(names);
  chart.categories = distinct.labels;
  chart.segment_names.push_back("productive");
  for (const char* part : kBadputOrder) chart.segment_names.push_back(part);
  for (const Row* row : drawn)
    for (const auto& [part, pct] : row->extra->badput_pct)
      if (std::find(chart.segment_names.begin(), chart.segment_names.end(), part) ==
          chart.segment_names.end())
        chart.segment_names.push_back(part);
  for (const auto& segment : chart.segment_names) {
    std::vector<double> values;
    for (const Row* row : drawn) {
      const auto& pct = row->extra->badput_pct;
      values.push_back(segment == "productive" ? row->goodput : pct.count(segment) ? pct.at(segment) : 0.0);
    }
    chart.values.push_back(std::move(values));
  }
  return {{id_prefix(prefix) + "simulate-badput",
           fmt::format("Each result's wall time: goodput (productive) and badput by part, % of the wall time "
                       "averaged over trials (extra.badput_pct){}",
                       distinct.shared.empty() ? "" : ", of " + distinct.shared + " (bars name the *)"),
           std::move(chart)}};
}

}  // namespace

std::vector<SimulateChart> simulate_charts(const std::vector<const Result*>& results,
                                           const std::string& prefix) {
  const auto rows = rows_of(results);
  std::vector<SimulateChart> out;
  for (auto&& charts : {scale_chart(rows, prefix), interval_chart(rows, prefix), badput_chart(rows, prefix)})
    for (auto& c : charts) out.push_back(c);
  return out;
}

}  // namespace fb::reports
