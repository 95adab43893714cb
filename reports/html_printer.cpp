// Reports as one self-contained HTML page: inline CSS and inline SVG charts, no scripts, no network.
// Charts (each a <figure class="chart"> holding exactly one <svg>):
//   busbw vs message size per collective (log x)        results "collective" with params.bytes, busbw_gbps
//   GEMM TFLOP/s per shape with peak and MAMF lines     results "gemm" with tflops; system.peak_tflops
//   training-step breakdown as stacked bars             results "train" with extra.breakdown {category: s},
//                                                         segments in extra.breakdown_categories' order
//   resilience timeline as a Gantt strip                summary.timeline, or derived from report.events
//   per-rank heat strips that make a straggler visible  results' per_rank arrays
//   point-to-point heatmaps (locate)                    results with extra.matrix {labels, bw_gbps}
//   simulate: goodput against GPUs and against the       results "simulate" (reports/simulate_charts.hpp)
//     checkpoint interval, the badput as stacked bars
//   benchmark timeline, then clocks and temperature     results' extra.telemetry windows; summary.telemetry
//     under it (per rank)                                .ranks[].series (--telemetry full), a suite's per
//                                                        step: summary.steps.<step>.telemetry
// Then one table per benchmark (a trend table when several reports are given).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/build_info.hpp"
#include "reports/compare.hpp"
#include "reports/gpu_slowdown.hpp"
#include "reports/heatmap_svg.hpp"
#include "reports/json_fields.hpp"
#include "reports/locate_extra.hpp"
#include "reports/report_printers.hpp"
#include "reports/report_view.hpp"
#include "reports/simulate_charts.hpp"
#include "reports/suite_step_extra.hpp"
#include "reports/svg_chart.hpp"
#include "reports/telemetry_extra.hpp"
#include "reports/text_format.hpp"
#include "reports/timeline.hpp"
#include "reports/train_extra.hpp"

namespace fb::reports {
namespace {

using nlohmann::json;

struct Figure {
  std::string id;
  std::string caption;
  std::string svg;
};

std::string first_segment(const std::string& name) {
  return name.substr(0, name.find('/'));
}

std::string slug(const std::string& s) {
  std::string out;
  for (const char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '-';
  return out;
}

// Element ids are slugs, and two names can share one ("ring.x", "ring_x"): the later ones get "-2", "-3", so
// every id in the page is unique and its anchor links to the right element.
class UniqueIds {
 public:
  std::string operator()(const std::string& id) {
    std::string out = id;
    for (int n = 2; !used_.insert(out).second; ++n) out = id + "-" + std::to_string(n);
    return out;
  }

 private:
  std::set<std::string> used_;
};

// Keeps first-appearance order of keys.
template <typename T>
struct Ordered {
  std::vector<std::string> order;
  std::map<std::string, T> items;
  T& operator[](const std::string& key) {
    auto [it, fresh] = items.try_emplace(key);
    if (fresh) order.push_back(key);
    return it->second;
  }
};

// Results a chart leaves out, so its caption can say so (the tables below list every result).
struct NotDrawn {
  std::size_t failed = 0, skipped = 0, no_value = 0;
  // Counts `r` when it is not drawn; true when it can be.
  bool drawable(const Result& r, bool has_value) {
    if (r.status == Status::failed) return ++failed, false;
    if (r.status == Status::skipped) return ++skipped, false;
    if (!has_value) return ++no_value, false;
    return true;
  }
  std::string caption() const {
    std::vector<std::string> parts;
    if (failed) parts.push_back(fmt::format("{} failed", failed));
    if (skipped) parts.push_back(fmt::format("{} skipped", skipped));
    if (no_value) parts.push_back(fmt::format("{} without a value", no_value));
    if (parts.empty()) return {};
    return fmt::format("; not drawn: {} (the table lists them)", fmt::join(parts, ", "));
  }
};

std::vector<Figure> collective_figures(const std::vector<NamedReport>& reports) {
  Ordered<Ordered<std::vector<svg::Point>>> groups;  // op → series → points
  std::map<std::string, NotDrawn> left_out;          // op → results not drawn
  for (std::size_t i = 0; i < reports.size(); ++i) {
    for (const auto& r : reports[i].report.results) {
      if (r.benchmark != "collective") continue;
      const auto bytes = number_at(r.params, "bytes");
      const Metric* bus = r.metric("busbw_gbps");
      if (!bytes) continue;  // a summary row (avg_busbw), not a message size
      if (!left_out[first_segment(r.name)].drawable(r, *bytes > 0 && bus && std::isfinite(bus->value)))
        continue;
      std::string series = string_field(r.params, "dtype");
      if (series.empty()) series = "busbw";
      if (r.name.ends_with("/inplace") || (r.params.contains("inplace") && r.params["inplace"] == true))
        series += " in-place";
      if (const auto g = number_at(r.params, "group")) series += fmt::format(" group {}", *g);
      // Another reduction or root is another curve (nccl-tests -o all, -r all): not one zig-zag line.
      if (const auto op = string_field(r.params, "redop"); !op.empty() && op != "sum" && op != "none")
        series += " " + op;
      if (const auto root = number_at(r.params, "root"); root && *root > 0)
        series += fmt::format(" root {}", *root);
      // MoE dispatch and combine move the same bytes: two curves, not a vertical line between them.
      if (const auto phase = string_field(r.params, "phase"); !phase.empty()) series += " " + phase;
      if (reports.size() > 1) series = run_label(reports, i) + " · " + series;
      groups[first_segment(r.name)][series].push_back({*bytes, bus->value});
    }
  }
  std::vector<Figure> out;
  for (const auto& op : groups.order) {
    svg::LineChart chart;
    chart.title = op + ": bus bandwidth vs message size";
    chart.x_label = "message size (bytes, log scale)";
    chart.y_label = "busbw (GB/s)";
    chart.x_axis = svg::XAxis::log2_bytes;
    const auto& series = groups.items.at(op);
    std::size_t points = 0;
    for (const auto& name : series.order) {
      chart.series.push_back({name, series.items.at(name)});
      points += series.items.at(name).size();
    }
    out.push_back({"busbw-" + slug(op),
                   fmt::format("{}: busbw (nccl-tests definition) per message size, {} point{}{}", op, points,
                               points == 1 ? "" : "s", left_out[op].caption()),
                   svg::render(chart)});
  }
  return out;
}

// system.peak_tflops.<key>[dtype] of one report; an fp8 variant without a figure of its own takes "fp8", as
// the peak lookup does (core/hardware_table.cpp).
std::optional<double> system_peak(const Report& report, const char* key, const std::string& dtype) {
  const json& p = report.system.is_object() ? report.system.value("peak_tflops", json::object()) : json();
  if (!p.is_object() || !p.contains(key) || !p[key].is_object()) return std::nullopt;
  if (auto v = number_at(p[key], dtype)) return v;
  if (dtype.starts_with("fp8")) return number_at(p[key], "fp8");
  return std::nullopt;
}

std::vector<Figure> gemm_figures(const std::vector<NamedReport>& reports) {
  // A bar per shape stays readable to about a hundred (the default cuda sweep has 64); past that the
  // caption says how many are left out (the tables list them all).
  constexpr std::size_t kMaxShapes = 96;
  struct Lines {  // one report's reference lines for a dtype
    std::optional<double> params_peak, params_mamf, sweep_mamf;
  };
  struct Group {
    Ordered<int> shapes;                                           // shape label → (unused)
    std::set<std::string> left_out;                                // shapes past kMaxShapes
    std::map<std::pair<std::size_t, std::string>, double> values;  // (report, shape) → TFLOP/s
    std::map<std::size_t, Lines> lines;                            // report → its lines
    NotDrawn not_drawn;
  };
  Ordered<Group> groups;  // dtype → shapes
  for (std::size_t i = 0; i < reports.size(); ++i) {
    for (const auto& r : reports[i].report.results) {
      if (r.benchmark != "gemm") continue;
      const Metric* tf = r.metric("tflops");
      std::string dtype = string_field(r.params, "dtype");
      if (dtype.empty()) dtype = first_segment(r.name);
      Group& g = groups[dtype];
      if (!g.not_drawn.drawable(r, tf && std::isfinite(tf->value))) continue;
      Lines& lines = g.lines[i];
      // A sweep's DTYPE/mamf result is its best shape again: a line, not a bar beside that shape.
      if (r.params.contains("best_shape")) {
        lines.sweep_mamf = tf->value;
        continue;
      }
      std::string shape = r.name.starts_with(dtype + "/") ? r.name.substr(dtype.size() + 1) : r.name;
      if (g.shapes.order.size() >= kMaxShapes && !g.shapes.items.count(shape)) {
        g.left_out.insert(shape);
        continue;
      }
      g.shapes[shape];
      g.values[{i, shape}] = tf->value;
      if (!lines.params_peak) lines.params_peak = number_at(r.params, "peak_tflops");
      if (!lines.params_mamf) lines.params_mamf = number_at(r.params, "mamf_tflops");
    }
  }
  std::vector<Figure> out;
  for (const auto& dtype : groups.order) {
    const Group& g = groups.items.at(dtype);
    if (g.shapes.order.empty()) continue;  // only a sweep's MAMF result: nothing to draw it against
    svg::BarChart chart;
    chart.title = fmt::format("GEMM {}: TFLOP/s per shape (M×N×K)", dtype);
    chart.y_label = "TFLOP/s";
    chart.categories = g.shapes.order;
    for (std::size_t i = 0; i < reports.size(); ++i) {
      std::vector<double> vals;
      bool any = false;
      for (const auto& shape : g.shapes.order) {
        const auto it = g.values.find({i, shape});
        vals.push_back(it == g.values.end() ? std::nan("") : it->second);
        any = any || it != g.values.end();
      }
      if (!any) continue;
      chart.series_names.push_back(run_label(reports, i));
      chart.values.push_back(std::move(vals));
    }
    // Each report's own peak and MAMF (its system, else its results' params; a sweep's measured MAMF where
    // none is published), for the reports with bars here: one line when they agree, one per report when not.
    std::map<std::string, std::vector<std::pair<std::size_t, double>>>
        by_kind;  // "peak"/"MAMF" → (report, v)
    for (const auto& [i, lines] : g.lines) {
      const Report& report = reports[i].report;
      auto peak = system_peak(report, "values", dtype);
      if (!peak) peak = lines.params_peak;
      auto mamf = system_peak(report, "mamf", dtype);
      if (!mamf) mamf = system_peak(report, "mamf_tflops", dtype);
      if (!mamf) mamf = lines.params_mamf;
      if (!mamf) mamf = lines.sweep_mamf;
      if (peak) by_kind["peak"].emplace_back(i, *peak);
      if (mamf) by_kind["MAMF"].emplace_back(i, *mamf);
    }
    std::string caption = fmt::format("GEMM {}: median TFLOP/s (2·M·N·K per second) per shape", dtype);
    const auto add_lines = [&](const std::string& kind, const std::string& what) {
      const auto it = by_kind.find(kind);
      if (it == by_kind.end()) return;
      const auto& list = it->second;
      const bool agree = std::all_of(list.begin(), list.end(),
                                     [&](const auto& e) { return e.second == list.front().second; });
      std::string values;
      for (const auto& [i, v] : list) {
        if (agree && !values.empty()) break;
        const std::string who = agree || reports.size() == 1 ? "" : " (" + run_label(reports, i) + ")";
        chart.ref_lines.push_back({kind + who, v});
        values += fmt::format("{}{}{}", values.empty() ? "" : ", ", format_value(v), who);
      }
      caption += fmt::format("; {} {} TFLOP/s", what, values);
    };
    add_lines("peak", "dense peak");
    add_lines("MAMF", "MAMF (best achievable matmul)");
    if (by_kind.empty()) caption += "; no peak or MAMF for this dtype in the report";
    if (!g.left_out.empty())
      caption += fmt::format("; the first {} of {} shapes (the table below lists all)", g.shapes.order.size(),
                             g.shapes.order.size() + g.left_out.size());
    caption += g.not_drawn.caption();
    out.push_back({"gemm-" + slug(dtype), caption, svg::render(chart)});
  }
  return out;
}

std::vector<Figure> train_figures(const std::vector<NamedReport>& reports) {
  svg::StackedBarChart chart;
  chart.title = "Training step: where the time goes";
  chart.y_label = "seconds per step";
  Ordered<int> segments, declared;  // declared: the order results give in extra.breakdown_categories
  std::vector<std::map<std::string, double>> bars;
  std::vector<std::string> names, runs;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    for (const auto& r : reports[i].report.results) {
      if (r.benchmark != "train") continue;
      auto breakdown = find_train_breakdown(r);
      if (!breakdown) continue;
      for (const auto& cat : breakdown->categories) declared[cat];
      std::map<std::string, double> bar = std::move(breakdown->seconds);
      for (const auto& [cat, v] : bar) segments[cat];
      if (bar.empty()) continue;
      names.push_back(r.name);
      runs.push_back(reports.size() > 1 ? run_label(reports, i) + ": " : "");
      bars.push_back(std::move(bar));
    }
  }
  if (bars.empty()) return {};
  // Labels are cut short under the bars: each is named by what sets it apart (layouts or a sweep of one
  // model differ after the first segment), the part all share said once in the caption.
  const auto distinct = distinct_labels(names);
  for (std::size_t k = 0; k < bars.size(); ++k) chart.categories.push_back(runs[k] + distinct.labels[k]);
  // Segments in the order the results declare (the training step's: compute at the bottom, exposed
  // communication above), then any other categories in order of appearance.
  for (const auto& cat : declared.order)
    if (segments.items.count(cat)) chart.segment_names.push_back(cat);
  for (const auto& cat : segments.order)
    if (std::find(chart.segment_names.begin(), chart.segment_names.end(), cat) == chart.segment_names.end())
      chart.segment_names.push_back(cat);
  for (const auto& seg : chart.segment_names) {
    std::vector<double> vals;
    for (const auto& bar : bars) vals.push_back(bar.count(seg) ? bar.at(seg) : 0.0);
    chart.values.push_back(std::move(vals));
  }
  return {{"train-breakdown",
           fmt::format("Median seconds per training step by category (result.extra.breakdown), {} run{}{}",
                       bars.size(), bars.size() == 1 ? "" : "s",
                       distinct.shared.empty() ? "" : ", of " + distinct.shared + " (bars name the *)"),
           svg::render(chart)}};
}

std::optional<double> goodput_of(const Result& r) {
  if (const Metric* m = r.metric("goodput_pct")) return m->value / 100;
  if (const Metric* m = r.metric("goodput")) return m->value;
  return std::nullopt;
}

// One lane per job: a report of several resilience jobs (--policy compare, a suite with two resilience steps)
// has one resilience result per job, in the order of the jobs, which names the lane and gives its goodput.
std::vector<Figure> resilience_figures(const std::vector<NamedReport>& reports) {
  svg::GanttChart chart;
  chart.title = "Resilience timeline: where the wall time went";
  chart.categories = timeline_categories();
  std::string notes;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto timelines = report_timelines(reports[i].report);
    std::vector<const Result*> jobs;
    for (const auto& r : reports[i].report.results)
      if (r.benchmark == "resilience") jobs.push_back(&r);
    const bool paired = jobs.size() == timelines.size();
    // Lane labels are cut short: several jobs are named by their suite steps, else by what sets their
    // names apart (policy-none, policy-drain).
    std::vector<std::string> names, steps;
    for (const Result* job : jobs) {
      names.push_back(job->name);
      if (const auto step = find_suite_step(*job)) steps.push_back(*step);
    }
    const bool by_step = steps.size() == jobs.size() &&
                         std::set<std::string>(steps.begin(), steps.end()).size() == steps.size();
    const auto job_labels = by_step ? steps : distinct_labels(names).labels;
    for (std::size_t k = 0; k < timelines.size(); ++k) {
      std::string label = run_label(reports, i);
      if (timelines.size() > 1)
        label = (reports.size() > 1 ? label + ": " : "") +
                (paired ? job_labels[k] : fmt::format("job {} of {}", k + 1, timelines.size()));
      chart.lanes.push_back({label, timelines[k].spans, timelines[k].markers});
      const Result* job = paired ? jobs[k] : nullptr;
      if (!job && timelines.size() == 1 && !jobs.empty()) job = jobs.front();
      if (const auto g = job ? goodput_of(*job) : std::nullopt)
        notes += fmt::format("{}{}: goodput {:.1f}%", notes.empty() ? "" : "; ", label, *g * 100);
    }
  }
  if (chart.lanes.empty()) return {};
  chart.marker_legend = "event (tooltip names it)";
  std::string caption =
      "Gantt strip of each job's wall time by category (goodput ledger categories), from the job's start; ▼ "
      "marks faults injected, failures and stragglers detected, and ranks drained";
  if (!notes.empty()) caption += ". " + notes;
  return {{"resilience-timeline", caption, svg::render(chart)}};
}

std::vector<Figure> simulate_figures(const std::vector<NamedReport>& reports) {
  std::vector<Figure> out;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (auto& c : simulate_charts(results_of(reports[i].report, "simulate"),
                                   reports.size() > 1 ? run_label(reports, i) : ""))
      out.push_back(  // ids are slugs: a run label may hold spaces or '#'
          {slug(c.id), c.caption, std::visit([](const auto& chart) { return svg::render(chart); }, c.chart)});
  return out;
}

// "2026-11-29T17:51:01.411Z" → Unix seconds (NaN when malformed): aligns the ranks' telemetry clocks.
double unix_from_utc(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
    return std::nan("");
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

// j[key] without copying it (series are long); a null json when j is no object or lacks the key.
const json& child_of(const json& j, const std::string& key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// The telemetry blocks ({"interval_ms", "ranks": [{"series", ...}]}) whose series a report's charts plot: a
// suite's per step (summary.steps.<step>.telemetry, in time order; its summary.telemetry holds only the
// moments after the last step), else the run's summary.telemetry. One sampler per rank serves the whole
// run, so the steps' series continue each other on one time axis.
struct TelemetryBlock {
  std::string step;  // empty outside a suite
  const json* tel = nullptr;
};
std::vector<TelemetryBlock> series_blocks(const Report& rep) {
  const auto has_series = [](const json& tel) {
    return tel.is_object() && tel.contains("ranks") && tel["ranks"].is_array() && !tel["ranks"].empty() &&
           tel["ranks"][0].is_object() && tel["ranks"][0].contains("series");
  };
  const auto first_t = [](const json& tel) {
    const json& t = child_of(tel["ranks"][0]["series"], "t_s");
    return t.is_array() && !t.empty() && t[0].is_number() ? t[0].get<double>() : 0.0;
  };
  std::vector<TelemetryBlock> out;
  if (!rep.summary.is_object()) return out;
  if (rep.summary.contains("steps") && rep.summary["steps"].is_object())
    for (const auto& [step, v] : rep.summary["steps"].items())
      if (v.is_object() && v.contains("telemetry") && has_series(v["telemetry"]))
        out.push_back({step, &v["telemetry"]});
  std::stable_sort(out.begin(), out.end(), [&](const TelemetryBlock& a, const TelemetryBlock& b) {
    return first_t(*a.tel) < first_t(*b.tel);
  });
  if (out.empty() && rep.summary.contains("telemetry") && has_series(rep.summary["telemetry"]))
    out.push_back({"", &rep.summary["telemetry"]});
  return out;
}

// Under --telemetry full: the benchmark timeline (each result's measured window; a suite's, a lane per step)
// with the clocks and the temperature of every rank under it, on rank 0's time axis. GPU readings when
// present, else the host's.
std::vector<Figure> telemetry_figures(const std::vector<NamedReport>& reports) {
  constexpr std::size_t kMaxPoints = 600;  // per series: long runs are thinned, not truncated
  std::vector<Figure> out;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const Report& rep = reports[i].report;
    const auto blocks = series_blocks(rep);
    if (blocks.empty()) continue;
    const bool suite = !blocks.front().step.empty();
    const json& first_ranks = (*blocks.front().tel)["ranks"];
    const double t0 = unix_from_utc(string_field(first_ranks[0], "started_at"));
    // The time axis starts when the run did (run.started_at, a little before the samplers), or where a rank's
    // sampler started earlier still (ranks on other nodes, their own clocks): nothing is drawn left of the
    // axis. A run start far from rank 0's sampler (hand-edited) is not used.
    double origin = t0;
    const auto earlier = [&origin](double t) {
      if (std::isfinite(t)) origin = std::isfinite(origin) ? std::min(origin, t) : t;
    };
    if (const double run_start = unix_from_utc(string_field(rep.run, "started_at"));
        !std::isfinite(t0) || (run_start <= t0 && t0 - run_start < 3600))
      earlier(run_start);
    for (const auto& b : blocks)
      if ((*b.tel)["ranks"].is_array())
        for (const auto& rank : (*b.tel)["ranks"]) earlier(unix_from_utc(string_field(rank, "started_at")));
    // Windows are on rank 0's sampler clock.
    const double rank0_offset = std::isfinite(t0) && std::isfinite(origin) ? t0 - origin : 0.0;
    const double interval_ms = blocks.front().tel->value("interval_ms", 0.0);
    const std::string suffix = reports.size() > 1 ? " — " + run_label(reports, i) : std::string();
    std::string source = "summary.telemetry.ranks[].series";
    if (suite) {
      std::vector<std::string> steps;
      for (const auto& b : blocks) steps.push_back(b.step);
      source =
          fmt::format("summary.steps.<step>.telemetry.ranks[].series of steps {}", fmt::join(steps, ", "));
    }

    svg::GanttChart timeline;
    timeline.title = "Benchmark timeline" + suffix;
    Ordered<svg::GanttLane> lanes;  // one per suite step, in order of appearance; else one
    for (const auto& r : rep.results) {
      const auto w = find_telemetry_window(r);
      if (!w || w->to_s < w->from_s) continue;
      const std::string lane = suite ? find_suite_step(r).value_or("results") : "results";
      lanes[lane].label = lane;
      lanes[lane].spans.push_back({w->from_s + rank0_offset, w->to_s + rank0_offset, r.benchmark});
    }
    struct Pending {
      std::string id, caption;
      svg::LineChart chart;
    };
    std::vector<Pending> pending;  // rendered once the shared time axis is known
    const auto plot = [&](const char* title, const char* unit, std::initializer_list<const char*> keys) {
      svg::LineChart chart;
      chart.title = std::string(title) + suffix;
      chart.y_label = unit;
      std::set<std::string> used;
      std::size_t readings = 0, samples = 0;
      bool thinned = false;
      // Ranks by their "rank" (a step's list may be ordered or sized differently), each with its column.
      std::map<int, std::pair<std::string, std::string>> column;  // rank → (group, key)
      std::map<int, double> shift;
      // A hand-edited entry that is not an object, or whose "rank" is not an integer, is left out.
      const auto rank_id = [](const json& r) -> std::optional<int> {
        if (!r.is_object()) return std::nullopt;
        if (!r.contains("rank")) return 0;
        if (!r["rank"].is_number_integer()) return std::nullopt;
        return r["rank"].get<int>();
      };
      for (const auto& b : blocks)
        for (const auto& rank : (*b.tel)["ranks"]) {
          const auto rid = rank_id(rank);
          if (!rid) continue;
          const int id = *rid;
          const json& series = child_of(rank, "series");
          if (!series.is_object()) continue;
          if (!shift.count(id)) shift[id] = unix_from_utc(string_field(rank, "started_at")) - origin;
          for (const char* group : {"gpu", "host"}) {  // the GPU's reading when the rank has one
            const json& g = child_of(series, group);
            for (const char* k : keys)
              if (!column.count(id) && g.is_object() && g.contains(k) && g[k].is_array())
                column[id] = {group, k};
          }
        }
      for (const auto& [id, col] : column) {
        // Readings first, then thinning: a column read less often than the sampling (the host clock from
        // /proc/cpuinfo, once a second) is null in most samples, and thinning first would drop most readings.
        std::vector<svg::Point> points;
        std::optional<double> last_t;
        for (const auto& b : blocks)
          for (const auto& rank : (*b.tel)["ranks"]) {
            if (rank_id(rank) != id) continue;
            const json& series = child_of(rank, "series");
            const json& g = child_of(series, col.first);
            if (!series.contains("t_s") || !series["t_s"].is_array() || !g.is_object() ||
                !g.contains(col.second) || !g[col.second].is_array())
              continue;
            const json& ts = series["t_s"];
            const json& ys = g[col.second];
            const std::size_t n = std::min(ts.size(), ys.size());
            const double dt = std::isfinite(shift[id]) ? shift[id] : rank0_offset;
            for (std::size_t k = 0; k < n; ++k) {
              if (!ts[k].is_number()) continue;
              const double t = ts[k].get<double>() + dt;
              // Consecutive steps share the sample at their boundary.
              if (last_t && t <= *last_t) continue;
              last_t = t;
              ++samples;
              if (ys[k].is_number()) points.push_back({t, ys[k].get<double>()});
            }
          }
        if (points.empty()) continue;
        readings += points.size();
        if (points.size() > kMaxPoints) {
          // kMaxPoints readings evenly spread, the first and the last among them (the axis reaches the end);
          // every k-th reading kept as few as half of them (601 readings drew 301).
          thinned = true;
          std::vector<svg::Point> kept;
          kept.reserve(kMaxPoints);
          const std::size_t n = points.size();
          for (std::size_t k = 0; k < kMaxPoints; ++k)
            kept.push_back(points[(k * (n - 1) + (kMaxPoints - 1) / 2) / (kMaxPoints - 1)]);
          points = std::move(kept);
        }
        used.insert(col.first + "." + col.second);
        chart.series.push_back({fmt::format("rank {}", id), std::move(points)});
      }
      if (chart.series.empty()) return;
      // "Sampled every X ms" only where the column was read in most samples; a column read less often
      // (null in the others) says how many readings it has.
      const bool every = readings * 2 >= samples;
      std::string cadence =
          every ? fmt::format("sampled every {} ms", interval_ms)
                : fmt::format("points: {} readings{} (read less often than the {} ms sampling)", readings,
                              chart.series.size() > 1 ? fmt::format(" over {} ranks", chart.series.size())
                                                      : std::string(),
                              interval_ms);
      if (thinned) cadence += fmt::format(", thinned to {} points per rank", kMaxPoints);
      pending.push_back(
          {slug(fmt::format("telemetry-{}-{}", title, i)),
           fmt::format("{} per rank from {} ({}), {}", title, source, fmt::join(used, ", "), cadence),
           std::move(chart)});
    };
    plot("Clock", "MHz", {"sm_clock_mhz", "cpu_mhz"});
    plot("Temperature", "°C", {"temperature_c"});
    if (pending.empty()) continue;  // no series at all
    for (const auto& name : lanes.order) timeline.lanes.push_back(std::move(lanes.items.at(name)));
    // One time axis for the strip and the charts under it: from the run's start (the origin above, which the
    // shifted windows and samples share) to the last window or reading, in the strip's unit.
    double end_s = 0;
    for (const auto& lane : timeline.lanes)
      for (const auto& span : lane.spans) end_s = std::max(end_s, span.end_s);
    for (const auto& p : pending)
      for (const auto& series : p.chart.series)
        for (const auto& pt : series.points) end_s = std::max(end_s, pt.x);
    if (!(end_s > 0) || !std::isfinite(end_s)) end_s = 1;
    const auto unit = svg::gantt_time_unit(end_s);
    timeline.t_min = 0;
    timeline.t_max = end_s;
    if (!timeline.lanes.empty())
      out.push_back(
          {slug(fmt::format("telemetry-timeline-{}", i)),
           std::string("Each result's measured window (extra.telemetry.from_s → to_s) on rank 0's clock") +
               (suite ? ", a lane per suite step" : "") +
               "; the clocks and temperatures below share its time axis",
           svg::render(timeline)});
    for (auto& p : pending) {
      p.chart.x_label = fmt::format("time since the run started ({})", unit.name);
      p.chart.x_min = 0;
      p.chart.x_max = end_s / unit.seconds;
      if (!timeline.lanes.empty()) p.chart.left = svg::gantt_label_width(timeline);
      for (auto& series : p.chart.series)
        for (auto& pt : series.points) pt.x /= unit.seconds;
      out.push_back({p.id, p.caption, svg::render(p.chart)});
    }
  }
  return out;
}

// One heatmap per result that carries a matrix (locate's point-to-point bandwidth, issue 17).
std::vector<Figure> matrix_figures(const std::vector<NamedReport>& reports) {
  std::vector<Figure> out;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (const auto& r : reports[i].report.results) {
      auto matrix = find_p2p_matrix(r);
      if (!matrix) continue;
      svg::Heatmap h;
      h.title = fmt::format("{} — {}", r.name, run_label(reports, i));
      h.unit = "GB/s";
      h.labels = std::move(matrix->labels);
      h.values = std::move(matrix->bw_gbps);
      out.push_back({fmt::format("matrix-{}-{}", i, slug(r.name)),
                     fmt::format("Point-to-point bandwidth of {} ({}): red cells are the slowest directions.",
                                 r.name, run_label(reports, i)),
                     svg::render(h)});
    }
  return out;
}

// Direction of a per-rank series: from the result's metric of the same name, else from the name's unit.
Better per_rank_direction(const Result& r, const std::string& key) {
  if (const Metric* m = r.metric(key); m && m->better != Better::none) return m->better;
  const auto ends = [&](std::string_view s) { return key.ends_with(s); };
  if (ends("_us") || ends("_ms") || ends("_s") || key.starts_with("time")) return Better::lower;
  if (ends("gbps") || ends("tflops") || ends("per_s") || ends("_per_s_per_gpu")) return Better::higher;
  return Better::none;
}

std::vector<Figure> rank_figures(const std::vector<NamedReport>& reports) {
  constexpr double kThreshold = 0.05;
  constexpr std::size_t kMaxRows = 24, kMaxKeysPerReport = 3;
  std::vector<Figure> out;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    Ordered<std::vector<std::pair<svg::HeatRow, double>>> by_key;  // key → rows with their worst slowness
    for (const auto& r : reports[i].report.results) {
      for (const auto& [key, values] : r.per_rank) {
        if (values.size() < 2) continue;
        const Better dir = per_rank_direction(r, key);
        if (dir == Better::none) continue;
        std::vector<double> finite;
        for (const double v : values)
          if (std::isfinite(v) && v > 0) finite.push_back(v);
        if (finite.size() < 2) continue;
        std::sort(finite.begin(), finite.end());
        const std::size_t n = finite.size();
        const double median = n % 2 ? finite[n / 2] : (finite[n / 2 - 1] + finite[n / 2]) / 2;
        // A --split group's cells sit under its own world ranks.
        svg::HeatRow row{r.name, {}, 0};
        row.first_rank = first_world_rank(reports[i].report, r, values.size());
        double worst = 0;
        for (const double v : values) {
          const double s = !(std::isfinite(v) && v > 0) ? std::nan("")
                           : dir == Better::lower       ? v / median
                                                        : median / v;
          row.slowness.push_back(s);
          if (std::isfinite(s)) worst = std::max(worst, s);
        }
        by_key[key].push_back({std::move(row), worst});
      }
    }
    for (std::size_t k = 0; k < by_key.order.size() && k < kMaxKeysPerReport; ++k) {
      const std::string& key = by_key.order[k];
      auto rows = by_key.items.at(key);
      if (rows.size() > kMaxRows) {  // keep the most skewed rows, in report order
        std::vector<double> worst;
        for (const auto& [row, w] : rows) worst.push_back(w);
        std::nth_element(worst.begin(), worst.begin() + (kMaxRows - 1), worst.end(), std::greater<>());
        const double cut = worst[kMaxRows - 1];
        std::vector<std::pair<svg::HeatRow, double>> kept;
        for (auto& p : rows)
          if (p.second >= cut && kept.size() < kMaxRows) kept.push_back(std::move(p));
        rows = std::move(kept);
      }
      svg::RankHeatStrip chart;
      chart.title = fmt::format("Per-rank {} — {}", key, run_label(reports, i));
      chart.threshold = kThreshold;
      // Per rank: the rows it has a cell in (a --split group's rows only), those beyond the threshold, the
      // worst.
      struct Slow {
        std::size_t rows = 0, beyond = 0;
        double worst = 0;
      };
      std::map<std::size_t, Slow> slow;
      for (auto& [row, w] : rows) {
        for (std::size_t c = 0; c < row.slowness.size(); ++c) {
          const double s = row.slowness[c];
          auto& e = slow[row.first_rank + c];
          ++e.rows;
          if (std::isfinite(s) && s > 1 + kThreshold) {
            ++e.beyond;
            e.worst = std::max(e.worst, s);
          }
        }
        chart.rows.push_back(std::move(row));
      }
      std::string verdict;
      for (const auto& [rank, e] : slow)
        if (e.beyond > 0 && e.beyond * 2 >= e.rows)
          verdict += fmt::format(
              "{}rank {} is more than {:.0f}% slower than the median in {} of {} rows (worst {:+.1f}%)",
              verdict.empty() ? "" : "; ", rank, kThreshold * 100, e.beyond, e.rows, (e.worst - 1) * 100);
      if (verdict.empty())
        verdict =
            fmt::format("no rank is more than {:.0f}% slower than the median in half of the rows or more",
                        kThreshold * 100);
      out.push_back({fmt::format("ranks-{}-{}", i + 1, slug(key)),
                     fmt::format("Per-rank {} relative to each row's median ({} row{}): {}", key,
                                 chart.rows.size(), chart.rows.size() == 1 ? "" : "s", verdict),
                     svg::render(chart)});
    }
  }
  return out;
}

constexpr const char* kCss =
    R"(:root{--ink:#1f2933;--muted:#616e7c;--line:#e4e7eb;--bg:#f5f7fa;--card:#fff;--ok:#2b8a3e;--bad:#c92a2a;--skip:#868e96}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;color:var(--ink);background:var(--bg)}
header{background:#1f2933;color:#fff;padding:22px 36px 20px}
header h1{margin:0;font-size:22px;font-weight:600;letter-spacing:.2px}
header p{margin:4px 0 0;color:#cbd2d9;font-size:13px}
main{max-width:1560px;margin:0 auto;padding:24px 36px 40px}
section{margin-bottom:30px}
h2{font-size:17px;margin:0 0 12px;font-weight:600}
h2 .count{color:var(--muted);font-weight:400;font-size:13px;margin-left:8px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px}
.card h3{margin:0 0 6px;font-size:14px;font-weight:600;word-break:break-all}
.card .stats{display:flex;gap:18px;margin:6px 0 8px}
.card .stat .v{font-size:22px;font-weight:600;line-height:1.1}
.card .stat .k{color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.6px}
.card .stat.bad .v{color:var(--bad)}
.card dl{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:0;font-size:12.5px}
.card dt{color:var(--muted)}
.card dd{margin:0;word-break:break-word}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(620px,1fr));gap:16px}
figure.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 10px 4px}
figure.chart svg{display:block;width:100%;height:auto}
figcaption{color:var(--muted);font-size:12.5px;padding:6px 8px 6px}
.table-wrap{overflow-x:auto;border:1px solid var(--line);border-radius:8px;background:var(--card)}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:6px 12px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
th{background:#f0f2f5;font-weight:600;color:#3e4c59;position:sticky;top:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even) td{background:#fafbfc}
tbody tr:last-child td{border-bottom:none}
td.err{white-space:normal;color:var(--bad);font-size:12px}
td.num.err{white-space:nowrap;font-size:inherit}.problems{font-size:13px}.problems .err{color:var(--bad)}
.pill{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600}
.pill.ok{background:#e6f4ea;color:var(--ok)}.pill.failed{background:#fdecea;color:var(--bad)}.pill.skipped{background:#f1f3f5;color:var(--skip)}
.up{color:var(--ok)}.down{color:var(--bad)}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12px;background:#f0f2f5;padding:1px 5px;border-radius:4px}
footer{color:var(--muted);font-size:12px;margin-top:28px;border-top:1px solid var(--line);padding-top:12px})";

std::string esc(const std::string& s) {
  return xml_escape(s);
}

std::string run_cards(const std::vector<NamedReport>& reports) {
  std::string out = "<div class=\"cards\">\n";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const Report& rep = reports[i].report;
    const RunFacts f = run_facts(rep);
    std::size_t ok = 0, failed = 0, skipped = 0;
    for (const auto& r : rep.results) {
      ok += r.status == Status::ok ? 1 : 0;
      failed += r.status == Status::failed ? 1 : 0;
      skipped += r.status == Status::skipped ? 1 : 0;
    }
    out += fmt::format("<div class=\"card\"><h3>{}</h3>\n<div class=\"stats\">", esc(run_label(reports, i)));
    out += fmt::format("<div class=\"stat\"><div class=\"v\">{}</div><div class=\"k\">results</div></div>",
                       rep.results.size());
    out += fmt::format("<div class=\"stat\"><div class=\"v\">{}</div><div class=\"k\">ok</div></div>", ok);
    out += fmt::format("<div class=\"stat{}\"><div class=\"v\">{}</div><div class=\"k\">failed</div></div>",
                       failed ? " bad" : "", failed);
    if (skipped)
      out += fmt::format("<div class=\"stat\"><div class=\"v\">{}</div><div class=\"k\">skipped</div></div>",
                         skipped);
    out += "</div>\n<dl>";
    const auto item = [&](const char* k, const std::string& v) {
      if (!v.empty()) out += fmt::format("<dt>{}</dt><dd>{}</dd>", k, v);
    };
    if (f.reference) item("reference", esc(f.title));
    item("run", esc(f.id));
    if (!f.command.empty()) item("command", "<code>" + esc(f.command) + "</code>");
    item("backend", esc(f.backend));
    if (f.world_size)
      item("ranks", fmt::format("{}{}", *f.world_size, f.hosts.empty() ? "" : " on " + esc(f.hosts)));
    item("device", esc(f.device));
    item("peak", esc(f.peak_source));
    item("started", esc(f.started_at));
    item("version", esc(f.version));
    out += "</dl></div>\n";
  }
  return out + "</div>\n";
}

std::string status_pill(const Result& r) {
  return fmt::format("<span class=\"pill {0}\">{0}</span>{1}", to_string(r.status),
                     is_dry_run(r) ? " <span class=\"pill skipped\">dry run</span>" : "");
}

std::string single_table(const std::vector<NamedReport>& reports, const std::string& bench) {
  const auto columns = metric_columns(reports, bench);
  std::string out = "<div class=\"table-wrap\"><table>\n<thead><tr><th>result</th><th>status</th>";
  std::vector<std::string> units;
  for (const auto& c : columns) {
    units.push_back(metric_unit(reports, bench, c));
    out += fmt::format("<th class=\"num\">{}</th>", esc(metric_heading(c, units.back())));
  }
  out += "</tr></thead>\n<tbody>\n";
  for (const Result* r : results_of(reports[0].report, bench)) {
    out += fmt::format("<tr><td>{}</td><td>{}</td>", esc(r->name), status_pill(*r));
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const Metric* m = r->metric(columns[i]);
      out += fmt::format(
          "<td class=\"num\"{}>{}</td>",
          m ? fmt::format(" title=\"{} {}\"", esc(format_value(m->value)), esc(m->unit)) : std::string(),
          m ? esc(value_cell(*m, units[i])) : "–");
    }
    out += "</tr>\n";
    if (r->error)
      out += fmt::format("<tr><td></td><td class=\"err\" colspan=\"{}\">{}</td></tr>\n", columns.size() + 1,
                         esc(*r->error));
  }
  return out + "</tbody></table></div>\n";
}

std::string trend_table(const std::vector<NamedReport>& reports, const std::string& bench) {
  std::string out = "<div class=\"table-wrap\"><table>\n<thead><tr><th>result</th><th>metric</th>";
  for (std::size_t i = 0; i < reports.size(); ++i)
    out += fmt::format("<th class=\"num\">{}</th>", esc(run_label(reports, i)));
  out += "<th class=\"num\">change</th></tr></thead>\n<tbody>\n";
  for (const auto& row : trend_rows(reports, bench)) {
    out += fmt::format("<tr><td>{}</td><td>{}</td>", esc(row.result), esc(trend_metric_heading(row)));
    for (std::size_t i = 0; i < reports.size(); ++i) {
      const bool bad = row.status[i] && *row.status[i] != Status::ok;
      out += fmt::format("<td class=\"num{}\">{}</td>", bad ? " err" : "", esc(trend_cell(row, i)));
    }
    if (const auto change = trend_change(row)) {
      const bool good =
          row.better == Better::none || *change == 0 ? true : (row.better == Better::higher) == (*change > 0);
      const char* cls = row.better == Better::none || std::fabs(*change) < 0.005 ? "" : good ? "up" : "down";
      out += fmt::format("<td class=\"num {}\">{}</td>", cls, format_change(*change));
    } else {
      out += "<td class=\"num\">–</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  // What did not pass, and why: the table has no room for the errors.
  const auto problems = trend_problems(reports, bench);
  if (problems.empty()) return out;
  out += "<ul class=\"problems\">\n";
  for (const auto& p : problems)
    out += fmt::format("<li><b>{}</b>: {} <span class=\"pill {}\">{}</span>{}</li>\n",
                       esc(run_label(reports, p.report)), esc(p.result), to_string(p.status),
                       to_string(p.status),
                       p.error.empty() ? std::string() : " <span class=\"err\">" + esc(p.error) + "</span>");
  return out + "</ul>\n";
}

}  // namespace

std::string render_html(const std::vector<NamedReport>& reports) {
  std::vector<Figure> figures;
  for (auto&& group : {collective_figures(reports), gemm_figures(reports), train_figures(reports),
                       resilience_figures(reports), simulate_figures(reports), rank_figures(reports),
                       matrix_figures(reports), telemetry_figures(reports)})
    for (auto& f : group) figures.push_back(f);

  std::size_t results = 0;
  for (const auto& nr : reports) results += nr.report.results.size();
  std::string title = reports.size() == 1 ? "factorybench report — " + run_label(reports, 0)
                                          : fmt::format("factorybench report — {} runs", reports.size());
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += fmt::format("<title>{}</title>\n<style>\n{}\n</style>\n</head>\n<body>\n", esc(title), kCss);
  out += fmt::format("<header><h1>{}</h1><p>{} report{} · {} result{} · {} chart{}</p></header>\n<main>\n",
                     esc(title), reports.size(), reports.size() == 1 ? "" : "s", results,
                     results == 1 ? "" : "s", figures.size(), figures.size() == 1 ? "" : "s");
  UniqueIds ids;
  out += fmt::format("<section id=\"{}\"><h2>Runs</h2>\n", ids("runs")) + run_cards(reports) + "</section>\n";
  // Throttling changes what the figures mean: said before them (the JSON alone held it).
  std::string warnings;
  for (std::size_t i = 0; i < reports.size(); ++i)
    for (const auto& w : slowdown_warnings(reports[i].report))
      warnings += fmt::format("<li class=\"err\"><b>Warning:</b> {}{}</li>\n",
                              reports.size() > 1 ? esc(run_label(reports, i)) + ": " : "", esc(w));
  if (!warnings.empty())
    out += fmt::format("<section id=\"{}\"><h2>Warnings</h2>\n<ul class=\"problems\">\n{}</ul>\n</section>\n",
                       ids("warnings"), warnings);
  if (!figures.empty()) {
    out += fmt::format("<section id=\"{}\"><h2>Charts</h2>\n<div class=\"charts\">\n", ids("charts"));
    for (const auto& f : figures)
      out += fmt::format("<figure class=\"chart\" id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n",
                         esc(ids(f.id)), f.svg, esc(f.caption));
    out += "</div>\n</section>\n";
  }
  for (const auto& bench : benchmark_order(reports)) {
    std::size_t n = 0;
    for (const auto& nr : reports) n += results_of(nr.report, bench).size();
    out += fmt::format("<section id=\"{}\"><h2>{}<span class=\"count\">{} result{}</span></h2>\n",
                       esc(ids("results-" + slug(bench))), esc(bench), n, n == 1 ? "" : "s");
    out += reports.size() == 1 ? single_table(reports, bench) : trend_table(reports, bench);
    out += "</section>\n";
  }
  // The renderer is this build; the reports may come from others (tool.version of each, when given).
  std::set<std::string> writers, schemas;
  for (const auto& nr : reports) {
    if (const auto v = run_facts(nr.report).version; !v.empty()) writers.insert(v);
    schemas.insert(nr.report.schema);
  }
  out += fmt::format(
      "<footer>Rendered by factorybench {} from {} report{} of schema {}{}. Self-contained: no scripts, no "
      "network; charts are inline SVG.</footer>\n",
      esc(build::kVersion), reports.size(), reports.size() == 1 ? "" : "s",
      esc(fmt::format("{}", fmt::join(schemas, ", "))),
      writers.empty() ? "" : esc(fmt::format(" written by factorybench {}", fmt::join(writers, ", "))));
  out += "</main>\n</body>\n</html>\n";
  return out;
}

}  // namespace fb::reports
