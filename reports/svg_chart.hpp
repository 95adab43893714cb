#pragma once
// Small, dependency-free SVG charts for the HTML report: line (linear or log2 x), grouped bars, stacked
// bars, a Gantt strip and a per-rank heat strip. Each render() returns one self-contained <svg> element
// (inline styles, no scripts, no external fonts) that scales to its container through its viewBox.
// Charts take plain numbers: deciding what to plot is the printer's job.
#include <optional>
#include <string>
#include <vector>

namespace fb::reports::svg {

struct Point {
  double x = 0, y = 0;
};

struct Series {
  std::string name;
  std::vector<Point> points;
  // A thinner dashed line, drawn under the solid ones: a spread, or a model beside a measurement.
  bool dashed = false;
  // Points of different things (each sweep's chosen interval): larger markers that no line joins.
  bool markers_only = false;
};

// A horizontal reference line (peak, MAMF, a published figure).
struct RefLine {
  std::string label;
  double value = 0;
};

// log2_count: a count on a log scale (GPUs in a job), ticks at powers of two named as sizes are ("16K").
enum class XAxis { linear, log2_bytes, log2_count };

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  XAxis x_axis = XAxis::linear;
  std::vector<Series> series;
  std::vector<RefLine> ref_lines;
  int width = 760;
  int height = 380;
  // A linear x axis fixed to [x_min, x_max] and a plot area starting at `left`: a chart drawn under a Gantt
  // strip on its time axis (gantt_label_width, gantt_time_unit) lines up with it.
  std::optional<double> x_min, x_max;
  double left = 64;
};

// Grouped bars: one group per category, one bar per series; NaN = no bar.
struct BarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<std::string> series_names;
  std::vector<std::vector<double>> values;  // [series][category]
  std::vector<RefLine> ref_lines;
  int width = 760;
  int height = 380;
};

// Stacked bars: one bar per category, one segment per segment name.
struct StackedBarChart {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<std::string> segment_names;
  std::vector<std::vector<double>> values;  // [segment][category]
  int width = 760;
  int height = 380;
};

struct Span {
  double start_s = 0;
  double end_s = 0;
  std::string category;
};

struct Marker {
  double t_s = 0;
  std::string label;
};

struct GanttLane {
  std::string label;
  std::vector<Span> spans;
  std::vector<Marker> markers;
};

struct GanttChart {
  std::string title;
  std::vector<GanttLane> lanes;
  // Legend order; categories not listed get palette colours after these.
  std::vector<std::string> categories;
  int width = 760;
  // The time axis, when charts below share it (else the spans' and markers' extent); 0 is "start".
  std::optional<double> t_min, t_max;
  std::string marker_legend = "fault / failure";
};

// A Gantt span as drawn. Spans narrower than the chart can show (3 ms steps on a minutes-long axis, each
// with its gap) would be thousands of overlapping sub-pixel rectangles: in time order they are gathered into
// cells of at least `min_s` (a pixel's time), each drawn in the colour of the category holding most of its
// time. `parts` is each category's time in the cell, in order of first appearance; a span wide enough to
// draw starts a cell of its own and is drawn as it is (one part).
struct DrawnSpan {
  double start_s = 0;
  double end_s = 0;
  std::string category;
  std::vector<std::pair<std::string, double>> parts;
};
std::vector<DrawnSpan> spans_at_resolution(const std::vector<Span>& spans, double min_s);

// Where a Gantt strip's plot area starts (after its lane labels), and the unit of its time axis for a range
// of `range_s` seconds (1 s, 60 s or 3600 s, with its name), for a chart that shares that axis.
double gantt_label_width(const GanttChart& chart);
struct TimeUnit {
  double seconds;
  const char* name;
};
TimeUnit gantt_time_unit(double range_s);

// Rows of per-rank values expressed as slowness relative to the row's median (1 = median, 1.2 = 20%
// slower). Cells above 1 + threshold are outlined: a straggler shows up as an outlined column.
struct HeatRow {
  std::string label;
  std::vector<double> slowness;
  std::size_t first_rank = 0;  // the rank of the first cell: a --split group's row starts at its own
};

struct RankHeatStrip {
  std::string title;
  std::vector<HeatRow> rows;
  double threshold = 0.05;
  int width = 760;
};

std::string render(const LineChart& chart);
std::string render(const BarChart& chart);
std::string render(const StackedBarChart& chart);
std::string render(const GanttChart& chart);
std::string render(const RankHeatStrip& chart);

// The colour of a Gantt category (productive, checkpoint, restore, wasted, detection, relaunch, init, …)
// or, for other names, of palette slot `fallback_index`.
std::string category_color(const std::string& category, std::size_t fallback_index);
// The i-th colour of the series palette.
std::string palette(std::size_t i);

// "Nice" axis ticks from lo to hi (1, 2, 2.5 or 5 × 10^k steps), about `count` of them, covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int count);
// Byte counts as axis labels: 1K, 64K, 1M, 16G (binary multiples).
std::string short_bytes(double bytes);

}  // namespace fb::reports::svg
