#include "reports/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "reports/text_format.hpp"

namespace fb::reports::svg {
namespace {

constexpr const char* kFont =
    "system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Helvetica,Arial,sans-serif";
constexpr const char* kInk = "#1f2933";
constexpr const char* kMuted = "#616e7c";
constexpr const char* kGrid = "#e4e7eb";
constexpr const char* kAxis = "#9aa5b1";
constexpr double kCharWidth = 7.2;  // average glyph advance at 12px, for layout estimates

std::string num(double v) {
  return fmt::format("{:.1f}", v);
}

// Tick labels: integers plainly, others with up to 4 significant digits; large values with k/M suffixes.
std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

std::string truncate(const std::string& s, std::size_t max_chars) {
  if (display_width(s) <= max_chars) return s;
  std::string out;
  std::size_t n = 0;
  for (const char ch : s) {
    const bool lead = (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    if (lead && ++n > max_chars - 1) break;
    out += ch;
  }
  return out + "…";
}

// The same keeping both ends, a third of the room for the head: result names differ in their tails (the
// message size of "moe-dispatch/moe_combine/fp32/506880") as much as in their heads.
std::string truncate_middle(const std::string& s, std::size_t max_chars) {
  if (display_width(s) <= max_chars) return s;
  std::vector<std::string> chars;  // UTF-8 code points
  for (const char ch : s) {
    if ((static_cast<unsigned char>(ch) & 0xC0) != 0x80 || chars.empty()) chars.emplace_back();
    chars.back() += ch;
  }
  const std::size_t head = (max_chars - 1) / 3, tail = max_chars - 1 - head;
  std::string out;
  for (std::size_t i = 0; i < head; ++i) out += chars[i];
  out += "…";
  for (std::size_t i = chars.size() - tail; i < chars.size(); ++i) out += chars[i];
  return out;
}

class Canvas {
 public:
  Canvas(int width, int height, const std::string& title) : width_(width), height_(height) {
    out_ = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
        "role=\"img\" "
        "style=\"max-width:100%;height:auto;font-family:{}\">\n<title>{}</title>\n",
        width, height, width, height, kFont, xml_escape(title));
    rect(0, 0, width, height, "#ffffff");
    text(16, 24, title, "start", 15, kInk, "font-weight:600");
  }
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& extra = "") {
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}/>\n", num(x),
                        num(y), num(std::max(0.0, w)), num(std::max(0.0, h)), fill, extra);
  }
  void rect_titled(double x, double y, double w, double h, const std::string& fill, const std::string& tip,
                   const std::string& extra = "") {
    out_ += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}><title>{}</title></rect>\n", num(x),
        num(y), num(std::max(0.0, w)), num(std::max(0.0, h)), fill, extra, xml_escape(tip));
  }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const std::string& extra = "") {
    out_ +=
        fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                    num(x1), num(y1), num(x2), num(y2), stroke, width, extra);
  }
  void text(double x, double y, const std::string& s, const char* anchor, int size, const std::string& fill,
            const std::string& style = "", double rotate = 0) {
    const std::string transform =
        rotate != 0 ? fmt::format(" transform=\"rotate({} {} {})\"", rotate, num(x), num(y)) : std::string();
    out_ +=
        fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" font-size=\"{}\" fill=\"{}\"{}{}>{}</text>\n",
                    num(x), num(y), anchor, size, fill, style.empty() ? "" : " style=\"" + style + "\"",
                    transform, xml_escape(s));
  }
  void raw(const std::string& s) { out_ += s; }
  std::string finish() { return out_ + "</svg>\n"; }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  int width_, height_;
  std::string out_;
};

struct LegendItem {
  std::string name;
  std::string color;
  bool dashed = false;
};

// Lays legend items out in rows from y; returns the height used (0 for no items).
double legend_height(const std::vector<LegendItem>& items, double width) {
  if (items.empty()) return 0;
  double x = 16, rows = 1;
  for (const auto& it : items) {
    const double w = 26 + display_width(it.name) * kCharWidth + 16;
    if (x + w > width - 16 && x > 16) {
      x = 16;
      ++rows;
    }
    x += w;
  }
  return rows * 18;
}

void draw_legend(Canvas& c, const std::vector<LegendItem>& items, double y) {
  double x = 16;
  for (const auto& it : items) {
    const double w = 26 + display_width(it.name) * kCharWidth + 16;
    if (x + w > c.width() - 16 && x > 16) {
      x = 16;
      y += 18;
    }
    if (it.dashed)
      c.line(x, y - 4, x + 20, y - 4, it.color, 2, " stroke-dasharray=\"5 3\"");
    else
      c.rect(x, y - 10, 20, 10, it.color, " rx=\"2\"");
    c.text(x + 26, y, it.name, "start", 12, kInk);
    x += w;
  }
}

struct Plot {
  double left, top, width, height;
  double right() const { return left + width; }
  double bottom() const { return top + height; }
};

// Y grid, tick labels and the axis title; returns the top of the value range (the last tick). A value
// near the largest double would overflow the ticks to inf and every coordinate to NaN: the axis stops at
// 1e300 and taller values are drawn clipped at the top (their tooltips keep the value).
double draw_y_axis(Canvas& c, const Plot& p, double ymax, const std::string& label) {
  if (!(ymax > 0)) ymax = 1;
  ymax = std::min(ymax, 1e300);
  const auto ticks = nice_ticks(0, ymax, 5);
  const double top = ticks.back();
  for (const double t : ticks) {
    const double y = p.bottom() - t / top * p.height;
    c.line(p.left, y, p.right(), y, kGrid);
    c.text(p.left - 8, y + 4, tick_label(t), "end", 11, kMuted);
  }
  c.line(p.left, p.top, p.left, p.bottom(), kAxis);
  c.line(p.left, p.bottom(), p.right(), p.bottom(), kAxis);
  if (!label.empty()) c.text(16, p.top + p.height / 2, label, "middle", 12, kMuted, "", -90);
  return top;
}

void draw_ref_lines(Canvas& c, const Plot& p, const std::vector<RefLine>& lines, double ytop) {
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& r = lines[i];
    if (!(r.value >= 0) || r.value > ytop) continue;
    const double y = p.bottom() - r.value / ytop * p.height;
    const std::string color = i == 0 ? "#3e4c59" : "#c0392b";
    c.line(p.left, y, p.right(), y, color, 1.5, " stroke-dasharray=\"6 4\"");
    c.text(p.right() - 4, y - 5, fmt::format("{} {}", r.label, tick_label(r.value)), "end", 11, color,
           "font-weight:600");
  }
}

// Height of v as a fraction of the axis, clipped to the plot: a negative value (no metric charted here has
// one) sits on the axis, one past the top at the top.
double axis_fraction(double v, double ytop) {
  return std::clamp(v / ytop, 0.0, 1.0);
}

std::vector<LegendItem> ref_legend(const std::vector<RefLine>& lines) {
  std::vector<LegendItem> items;
  for (std::size_t i = 0; i < lines.size(); ++i)
    items.push_back({lines[i].label, i == 0 ? "#3e4c59" : "#c0392b", true});
  return items;
}

int hex(const std::string& color, int i) {
  return std::stoi(color.substr(1 + 2 * i, 2), nullptr, 16);
}

std::string mix(const std::string& a, const std::string& b, double t) {
  t = std::clamp(t, 0.0, 1.0);
  int rgb[3];
  for (int i = 0; i < 3; ++i) rgb[i] = static_cast<int>(std::lround(hex(a, i) + (hex(b, i) - hex(a, i)) * t));
  return fmt::format("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]);
}

// Diverging scale: median white, slower towards red (full at +25%), faster towards blue (softer).
std::string slowness_color(double s) {
  if (!std::isfinite(s)) return "#d9d9d9";
  const double d = std::clamp((s - 1.0) / 0.25, -1.0, 1.0);
  return d >= 0 ? mix("#f5f7fa", "#b2182b", d) : mix("#f5f7fa", "#2166ac", -d * 0.75);
}

// Bottom category labels, rotated when they do not fit the slot.
double category_label_space(const std::vector<std::string>& cats, double slot) {
  std::size_t longest = 0;
  for (const auto& s : cats) longest = std::max(longest, display_width(truncate(s, 28)));
  return longest * kCharWidth > slot - 4 ? 16 + std::min<std::size_t>(longest, 28) * kCharWidth * 0.6 : 22;
}

void draw_category_labels(Canvas& c, const Plot& p, const std::vector<std::string>& cats, double slot) {
  std::size_t longest = 0;
  for (const auto& s : cats) longest = std::max(longest, display_width(truncate(s, 28)));
  const bool rotate = longest * kCharWidth > slot - 4;
  for (std::size_t i = 0; i < cats.size(); ++i) {
    const double x = p.left + slot * (static_cast<double>(i) + 0.5);
    if (rotate)
      c.text(x + 4, p.bottom() + 14, truncate(cats[i], 28), "end", 11, kInk, "", -35);
    else
      c.text(x, p.bottom() + 16, cats[i], "middle", 11, kInk);
  }
}

}  // namespace

std::string palette(std::size_t i) {
  static const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

std::string category_color(const std::string& category, std::size_t fallback_index) {
  // Resilience categories (goodput ledger names and plain words) and training-step categories.
  static const std::map<std::string, std::string> kColors = {{"productive", "#59a14f"},
                                                             {"checkpoint", "#4e79a7"},
                                                             {"ckpt_save", "#4e79a7"},
                                                             {"restore", "#b07aa1"},
                                                             {"ckpt_restore", "#b07aa1"},
                                                             {"wasted", "#e15759"},
                                                             {"redone", "#e15759"},
                                                             {"spare_wait", "#d37295"},
                                                             {"straggler", "#edc948"},
                                                             {"detection", "#f28e2b"},
                                                             {"relaunch", "#9c755f"},
                                                             {"init", "#bab0ac"},
                                                             {"slowdown", "#edc948"},
                                                             {"other", "#d3d6da"},
                                                             {"gemm", "#4e79a7"},
                                                             {"attention", "#76b7b2"},
                                                             {"moe_dispatch_combine", "#b07aa1"},
                                                             {"elementwise", "#edc948"},
                                                             {"exposed_tp_comm", "#e15759"},
                                                             {"exposed_ep_comm", "#ff9da7"},
                                                             {"exposed_dp_comm", "#f28e2b"},
                                                             {"optimizer", "#59a14f"},
                                                             {"pipeline_bubble", "#bab0ac"}};
  const auto it = kColors.find(category);
  return it != kColors.end() ? it->second : palette(fallback_index);
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  count = std::max(count, 1);
  const double raw = (hi - lo) / count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10) * mag;
  const double start = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (double t = start; ticks.size() < 64; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

std::string short_bytes(double bytes) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g}{}", std::round(bytes * 100) / 100, kUnits[u]);
}

std::string render(const LineChart& chart) {
  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < chart.series.size(); ++i) legend.push_back({chart.series[i].name, palette(i)});
  for (auto& it : ref_legend(chart.ref_lines)) legend.push_back(it);
  Canvas c(chart.width, chart.height, chart.title);
  const double lh = legend_height(legend, chart.width);
  draw_legend(c, legend, 46);
  const Plot p{chart.left, 46 + lh + 6, chart.width - chart.left - 24, chart.height - (46 + lh + 6) - 50};

  const bool log = chart.x_axis != XAxis::linear;
  const bool fixed = !log && chart.x_min && chart.x_max && *chart.x_max > *chart.x_min;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = 0;
  const auto tx = [&](double x) { return log ? std::log2(x) : x; };
  for (const auto& s : chart.series)
    for (const auto& pt : s.points) {
      if (log && !(pt.x > 0)) continue;
      xmin = std::min(xmin, tx(pt.x));
      xmax = std::max(xmax, tx(pt.x));
      if (std::isfinite(pt.y)) ymax = std::max(ymax, pt.y);
    }
  for (const auto& r : chart.ref_lines) ymax = std::max(ymax, r.value);
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1;
  std::vector<double> xticks;
  if (log) {
    xmin = std::floor(xmin);
    xmax = std::ceil(xmax);
    if (xmax <= xmin) xmax = xmin + 1;
    const int step = std::max(1, static_cast<int>(std::ceil((xmax - xmin) / 9)));
    for (double e = xmin; e <= xmax + 1e-9; e += step) xticks.push_back(e);
  } else if (fixed) {
    xmin = *chart.x_min;
    xmax = *chart.x_max;
    for (const double t : nice_ticks(xmin, xmax, 6))
      if (t >= xmin - 1e-9 * (xmax - xmin) && t <= xmax + 1e-9 * (xmax - xmin)) xticks.push_back(t);
  } else {
    xticks = nice_ticks(xmin, xmax, 6);
    xmin = xticks.front();
    xmax = xticks.back();
  }
  const double ytop = draw_y_axis(c, p, ymax * 1.06, chart.y_label);
  const auto px = [&](double x) { return p.left + (tx(x) - xmin) / (xmax - xmin) * p.width; };
  const auto py = [&](double y) { return p.bottom() - axis_fraction(y, ytop) * p.height; };
  for (const double t : xticks) {
    const double x = p.left + (t - xmin) / (xmax - xmin) * p.width;
    c.line(x, p.bottom(), x, p.bottom() + 4, kAxis);
    c.text(x, p.bottom() + 17, log ? short_bytes(std::exp2(t)) : tick_label(t), "middle", 11, kMuted);
  }
  if (!chart.x_label.empty())
    c.text(p.left + p.width / 2, p.bottom() + 38, chart.x_label, "middle", 12, kMuted);
  draw_ref_lines(c, p, chart.ref_lines, ytop);

  // Dashed series first, so that the solid ones (the measurements) are drawn over them.
  std::vector<std::size_t> order;
  for (const bool dashed : {true, false})
    for (std::size_t i = 0; i < chart.series.size(); ++i)
      if (chart.series[i].dashed == dashed) order.push_back(i);
  for (const std::size_t i : order) {
    auto pts = chart.series[i].points;
    std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    std::string poly;
    for (const auto& pt : pts)
      if (std::isfinite(pt.y) && (!log || pt.x > 0))
        poly += fmt::format("{},{} ", num(px(pt.x)), num(py(pt.y)));
    const std::string color = palette(i);
    if (!chart.series[i].markers_only)
      c.raw(
          fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" "
                      "stroke-linejoin=\"round\"{}/>\n",
                      poly, color, chart.series[i].dashed ? "1.5" : "2.2",
                      chart.series[i].dashed ? " stroke-dasharray=\"5 4\"" : ""));
    for (const auto& pt : pts) {
      if (!std::isfinite(pt.y) || (log && !(pt.x > 0))) continue;
      c.raw(fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\"><title>{}: {} → {}</title></circle>\n",
          num(px(pt.x)), num(py(pt.y)), chart.series[i].markers_only ? 5 : 3, color,
          xml_escape(chart.series[i].name),
          chart.x_axis == XAxis::log2_bytes   ? short_bytes(pt.x)
          : chart.x_axis == XAxis::log2_count ? fmt::format("{:.0f}", pt.x)
                                              : tick_label(pt.x),
          tick_label(pt.y)));
    }
  }
  return c.finish();
}

std::string render(const BarChart& chart) {
  std::vector<LegendItem> legend;
  if (chart.series_names.size() > 1)
    for (std::size_t i = 0; i < chart.series_names.size(); ++i)
      legend.push_back({chart.series_names[i], palette(i)});
  for (auto& it : ref_legend(chart.ref_lines)) legend.push_back(it);
  const double lh = legend_height(legend, chart.width);
  const double n = std::max<std::size_t>(chart.categories.size(), 1);
  const double slot = (chart.width - 64.0 - 24) / n;
  const double label_space = category_label_space(chart.categories, slot);
  Canvas c(chart.width, chart.height, chart.title);
  draw_legend(c, legend, 46);
  const Plot p{64, 46 + lh + 6, chart.width - 64.0 - 24, chart.height - (46 + lh + 6) - label_space - 8};
  double ymax = 0;
  for (const auto& s : chart.values)
    for (const double v : s)
      if (std::isfinite(v)) ymax = std::max(ymax, v);
  for (const auto& r : chart.ref_lines) ymax = std::max(ymax, r.value);
  const double ytop = draw_y_axis(c, p, ymax * 1.08, chart.y_label);
  const std::size_t ns = std::max<std::size_t>(chart.values.size(), 1);
  const double bar = slot * 0.72 / static_cast<double>(ns);
  const bool value_labels = chart.categories.size() * ns <= 16;
  for (std::size_t s = 0; s < chart.values.size(); ++s) {
    for (std::size_t i = 0; i < chart.categories.size() && i < chart.values[s].size(); ++i) {
      const double v = chart.values[s][i];
      if (!std::isfinite(v)) continue;
      const double x = p.left + slot * static_cast<double>(i) + slot * 0.14 + bar * static_cast<double>(s);
      const double h = axis_fraction(v, ytop) * p.height;
      const std::string series = s < chart.series_names.size() ? chart.series_names[s] : std::string();
      c.rect_titled(x, p.bottom() - h, bar - 1, h, palette(s),
                    fmt::format("{}{}: {}", chart.categories[i], series.empty() ? "" : " (" + series + ")",
                                tick_label(v)),
                    " rx=\"1.5\"");
      if (value_labels && h > 22 && bar > 34)
        c.text(x + bar / 2, p.bottom() - h + 15, tick_label(v), "middle", 11, "#ffffff", "font-weight:600");
      else if (value_labels)
        c.text(x + bar / 2, p.bottom() - h - 4, tick_label(v), "middle", 10, kInk);
    }
  }
  draw_ref_lines(c, p, chart.ref_lines, ytop);
  draw_category_labels(c, p, chart.categories, slot);
  return c.finish();
}

std::string render(const StackedBarChart& chart) {
  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < chart.segment_names.size(); ++i)
    legend.push_back({chart.segment_names[i], category_color(chart.segment_names[i], i)});
  const double lh = legend_height(legend, chart.width);
  const double n = std::max<std::size_t>(chart.categories.size(), 1);
  const double slot = (chart.width - 64.0 - 24) / n;
  const double label_space = category_label_space(chart.categories, slot);
  Canvas c(chart.width, chart.height, chart.title);
  draw_legend(c, legend, 46);
  const Plot p{64, 46 + lh + 6, chart.width - 64.0 - 24, chart.height - (46 + lh + 6) - label_space - 8};
  std::vector<double> totals(chart.categories.size(), 0.0);
  for (const auto& seg : chart.values)
    for (std::size_t i = 0; i < totals.size() && i < seg.size(); ++i)
      if (std::isfinite(seg[i]) && seg[i] > 0)
        totals[i] = std::min(totals[i] + seg[i], std::numeric_limits<double>::max());
  const double ymax = totals.empty() ? 1 : *std::max_element(totals.begin(), totals.end());
  const double ytop = draw_y_axis(c, p, ymax * 1.08, chart.y_label);
  const double bar = std::min(slot * 0.6, 90.0);
  for (std::size_t i = 0; i < chart.categories.size(); ++i) {
    const double x = p.left + slot * (static_cast<double>(i) + 0.5) - bar / 2;
    double acc = 0;
    for (std::size_t s = 0; s < chart.values.size(); ++s) {
      const double v = i < chart.values[s].size() ? chart.values[s][i] : 0;
      if (!std::isfinite(v) || v <= 0) continue;
      const double y0 = p.bottom() - axis_fraction(acc, ytop) * p.height;
      const double h = (axis_fraction(acc + v, ytop) - axis_fraction(acc, ytop)) * p.height;
      c.rect_titled(x, y0 - h, bar, h, category_color(chart.segment_names[s], s),
                    fmt::format("{} — {}: {} ({:.1f}%)", chart.categories[i], chart.segment_names[s],
                                tick_label(v), totals[i] > 0 ? 100 * (v / totals[i]) : 0),
                    " stroke=\"#ffffff\" stroke-width=\"0.8\"");
      if (h > 14 && bar > 40)
        c.text(x + bar / 2, y0 - h / 2 + 4, fmt::format("{:.0f}%", 100 * (v / totals[i])), "middle", 10,
               "#ffffff", "font-weight:600");
      acc += v;
    }
    c.text(x + bar / 2, p.bottom() - axis_fraction(acc, ytop) * p.height - 5, tick_label(totals[i]), "middle",
           10, kInk);
  }
  draw_category_labels(c, p, chart.categories, slot);
  return c.finish();
}

std::vector<DrawnSpan> spans_at_resolution(const std::vector<Span>& spans, double min_s) {
  std::vector<DrawnSpan> out;
  for (const auto& s : spans) {
    const double w = std::max(0.0, s.end_s - s.start_s);
    if (out.empty() || out.back().end_s - out.back().start_s >= min_s) {
      out.push_back({s.start_s, std::max(s.start_s, s.end_s), s.category, {{s.category, w}}});
      continue;
    }
    auto& cell = out.back();  // still under min_s: this span joins it
    cell.end_s = std::max(cell.end_s, s.end_s);
    auto part = std::find_if(cell.parts.begin(), cell.parts.end(),
                             [&](const auto& p) { return p.first == s.category; });
    if (part == cell.parts.end())
      cell.parts.emplace_back(s.category, w);
    else
      part->second += w;
  }
  for (auto& cell : out)  // the first of the largest parts: a tie goes to the category seen first
    cell.category = std::max_element(cell.parts.begin(), cell.parts.end(), [](const auto& a, const auto& b) {
                      return a.second < b.second;
                    })->first;
  return out;
}

double gantt_label_width(const GanttChart& chart) {
  // The label column fits the longest lane name up to a third of the chart; longer names are cut to it.
  std::size_t longest = 0;
  for (const auto& lane : chart.lanes) longest = std::max(longest, display_width(lane.label));
  return std::clamp(26 + longest * kCharWidth, 90.0, std::max(90.0, chart.width / 3.0));
}

TimeUnit gantt_time_unit(double range_s) {
  if (range_s > 3 * 3600) return {3600, "h"};
  if (range_s > 180) return {60, "min"};
  return {1, "s"};
}

std::string render(const GanttChart& chart) {
  // Categories: the given order first, then any others in order of appearance.
  std::vector<std::string> cats = chart.categories;
  for (const auto& lane : chart.lanes)
    for (const auto& s : lane.spans)
      if (std::find(cats.begin(), cats.end(), s.category) == cats.end()) cats.push_back(s.category);
  std::vector<std::string> used;
  for (const auto& cat : cats)
    for (const auto& lane : chart.lanes)
      if (std::any_of(lane.spans.begin(), lane.spans.end(),
                      [&](const Span& s) { return s.category == cat; })) {
        used.push_back(cat);
        break;
      }
  std::map<std::string, std::string> color;
  std::vector<LegendItem> legend;
  for (std::size_t i = 0; i < cats.size(); ++i) color[cats[i]] = category_color(cats[i], i);
  for (const auto& cat : used) legend.push_back({cat, color[cat]});
  bool any_marker = false;
  for (const auto& lane : chart.lanes) any_marker = any_marker || !lane.markers.empty();
  if (any_marker) legend.push_back({chart.marker_legend, "#1f2933"});

  const double lh = legend_height(legend, chart.width);
  const double label_w = gantt_label_width(chart);
  const auto label_chars = static_cast<std::size_t>(std::max(4.0, (label_w - 20) / kCharWidth));
  const double lane_h = 34, gap = 18;
  const double top = 46 + lh + 10;
  const int height = static_cast<int>(top + chart.lanes.size() * (lane_h + gap) + 44);
  Canvas c(chart.width, height, chart.title);
  draw_legend(c, legend, 46);

  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const auto& lane : chart.lanes) {
    for (const auto& s : lane.spans) t0 = std::min(t0, s.start_s), t1 = std::max(t1, s.end_s);
    for (const auto& m : lane.markers) t0 = std::min(t0, m.t_s), t1 = std::max(t1, m.t_s);
  }
  if (chart.t_min && chart.t_max) t0 = *chart.t_min, t1 = *chart.t_max;
  if (!std::isfinite(t0)) t0 = 0, t1 = 1;
  if (t1 <= t0) t1 = t0 + 1;
  if (!std::isfinite(t1 - t0)) t0 = 0, t1 = 1;  // spans of absurd times: an empty axis, not NaN coordinates
  const double range = t1 - t0;
  const auto [unit, unit_name] = gantt_time_unit(range);
  const Plot p{label_w, top, chart.width - label_w - 24, chart.lanes.size() * (lane_h + gap)};
  const auto px = [&](double t) { return p.left + std::clamp((t - t0) / range, 0.0, 1.0) * p.width; };
  const auto ticks = nice_ticks(0, range / unit, 8);
  for (const double t : ticks) {
    if (t * unit > range * 1.0001) break;
    const double x = p.left + t * unit / range * p.width;
    c.line(x, p.top - 4, x, p.bottom(), kGrid);
    c.text(x, p.bottom() + 16, tick_label(t), "middle", 11, kMuted);
  }
  c.text(p.left + p.width / 2, p.bottom() + 36, fmt::format("time since start ({})", unit_name), "middle", 12,
         kMuted);

  for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
    const auto& lane = chart.lanes[l];
    const double y = p.top + static_cast<double>(l) * (lane_h + gap) + gap / 2;
    c.text(label_w - 10, y + lane_h / 2 + 4, truncate(lane.label, label_chars), "end", 12, kInk);
    c.rect(p.left, y, p.width, lane_h, "#f5f7fa");
    const auto cells = spans_at_resolution(lane.spans, range / p.width);
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const auto& s = cells[i];
      const double start = std::clamp(s.start_s, t0, t1), end = std::clamp(s.end_s, t0, t1);
      const double x0 = px(start), x1 = px(end);
      // A cell that the next one continues reaches half a pixel under it: edges at fractional pixels
      // (anti-aliased, or rounded apart under crispEdges) would otherwise show the lane's background as a
      // seam between them.
      const double overlap = i + 1 < cells.size() && cells[i + 1].start_s <= s.end_s ? 0.5 : 0;
      std::string tip =
          fmt::format("{}: {:.2f}–{:.2f} s ({:.2f} s)", s.category, start - t0, end - t0, end - start);
      if (s.parts.size() > 1) {
        tip += ", spans too short to draw one by one:";
        for (std::size_t k = 0; k < s.parts.size(); ++k)
          tip += s.parts[k].second < 0.0005
                     ? fmt::format("{} {} <0.001 s", k ? "," : "", s.parts[k].first)
                     : fmt::format("{} {} {:.3f} s", k ? "," : "", s.parts[k].first, s.parts[k].second);
      }
      c.rect_titled(x0, y, std::max(x1 - x0 + overlap, 0.6), lane_h, color[s.category], tip,
                    " shape-rendering=\"crispEdges\"");
    }
    for (const auto& m : lane.markers) {
      const double x = px(m.t_s);
      c.raw(fmt::format(
          "<path d=\"M{} {} l-5 -8 h10 z\" fill=\"#1f2933\"><title>{} at {:.2f} s</title></path>\n", num(x),
          num(y - 1), xml_escape(m.label), m.t_s - t0));
    }
  }
  return c.finish();
}

std::string render(const RankHeatStrip& chart) {
  std::size_t ranks = 0;
  for (const auto& r : chart.rows) ranks = std::max(ranks, r.first_rank + r.slowness.size());
  const double label_w = 210;
  const double cell_w =
      ranks ? std::clamp((chart.width - label_w - 24) / static_cast<double>(ranks), 3.0, 56.0) : 10;
  const double cell_h = 18;
  const double top = 62;
  const int height = static_cast<int>(top + chart.rows.size() * cell_h + 64);
  // Past about 175 ranks the smallest cell no longer fits the nominal width: the canvas grows (the page
  // scales it down) rather than cutting off the last ranks.
  const int width = std::max(chart.width, static_cast<int>(std::ceil(label_w + cell_w * ranks + 24)));
  Canvas c(width, height, chart.title);
  c.text(16, 42, "each cell: a rank's value relative to the median of its row; outlined = beyond threshold",
         "start", 11, kMuted);
  const std::size_t every = ranks <= 32 ? 1 : ranks <= 128 ? 8 : 32;
  for (std::size_t k = 0; k < ranks; k += every)
    c.text(label_w + cell_w * (static_cast<double>(k) + 0.5), top - 6, std::to_string(k), "middle", 10,
           kMuted);
  for (std::size_t r = 0; r < chart.rows.size(); ++r) {
    const auto& row = chart.rows[r];
    const double y = top + static_cast<double>(r) * cell_h;
    c.text(label_w - 8, y + cell_h / 2 + 4, truncate_middle(row.label, 30), "end", 11, kInk);
    for (std::size_t i = 0; i < row.slowness.size(); ++i) {
      const double s = row.slowness[i];
      const bool hot = std::isfinite(s) && s > 1 + chart.threshold;
      const std::size_t k = row.first_rank + i;
      c.rect_titled(
          label_w + cell_w * static_cast<double>(k), y, cell_w - (cell_w > 6 ? 1 : 0), cell_h - 1,
          slowness_color(s),
          fmt::format("{} — rank {}: {}", row.label, k,
                      std::isfinite(s) ? fmt::format("{:+.1f}% vs median", (s - 1) * 100) : "no value"),
          hot ? " stroke=\"#67000d\" stroke-width=\"1.5\"" : "");
    }
  }
  // A discrete colour key: faster ... median ... slower.
  const double ky = top + chart.rows.size() * cell_h + 18;
  c.text(label_w - 8, ky + 10, "vs median", "end", 11, kMuted);
  for (int i = 0; i <= 10; ++i) {
    const double s = 1.0 + (i - 5) * 0.05;
    c.rect(label_w + i * 22, ky, 21, 12, slowness_color(s));
  }
  c.text(label_w, ky + 26, "-25%", "start", 10, kMuted);
  c.text(label_w + 5 * 22 + 11, ky + 26, "median", "middle", 10, kMuted);
  c.text(label_w + 11 * 22, ky + 26, "+25% slower", "end", 10, kMuted);
  c.text(label_w - 8, top - 6, "rank", "end", 10, kMuted);
  return c.finish();
}

}  // namespace fb::reports::svg
