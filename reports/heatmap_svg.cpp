#include "reports/heatmap_svg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "reports/text_format.hpp"

namespace fb::reports::svg {
namespace {

// Red (0) → amber (0.5) → green (1), linear in RGB between the three stops.
std::string ramp(double t) {
  t = std::clamp(t, 0.0, 1.0);
  struct Rgb {
    double r, g, b;
  };
  constexpr Rgb lo{0xd7, 0x30, 0x27}, mid{0xfe, 0xe0, 0x8b}, hi{0x1a, 0x98, 0x50};
  const Rgb a = t < 0.5 ? lo : mid, b = t < 0.5 ? mid : hi;
  const double u = t < 0.5 ? t * 2 : (t - 0.5) * 2;
  auto mix = [&](double x, double y) { return static_cast<int>(std::lround(x + (y - x) * u)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
}

}  // namespace

std::string render(const Heatmap& chart) {
  const auto n = chart.labels.size();
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& row : chart.values)
    for (double v : row)
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
  const int label_w = 230, top = 44, legend_h = 36;
  const int cell = n == 0 ? 0 : std::max(6, std::min(48, static_cast<int>((chart.width - label_w - 20) / n)));
  const int height = top + static_cast<int>(n) * cell + legend_h + 20;
  // Past about 85 endpoints the smallest cell no longer fits the nominal width: the canvas grows (the page
  // scales it down) rather than cutting off the last columns.
  const int width = std::max(chart.width, label_w + static_cast<int>(n) * cell + 20);
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" "
      "role=\"img\" aria-label=\"{2}\" "
      "style=\"max-width:100%;height:auto;font-family:system-ui,sans-serif;font-size:11px\">\n"
      "<text x=\"8\" y=\"18\" style=\"font-size:13px;font-weight:600\">{2}</text>\n"
      "<text x=\"8\" y=\"34\" fill=\"#666\">row = sender, column = receiver</text>\n",
      width, height, xml_escape(chart.title));
  const bool text = cell >= 34;
  for (std::size_t i = 0; i < n; ++i) {
    const int y = top + static_cast<int>(i) * cell;
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", label_w - 6,
                       y + cell / 2 + 4, xml_escape(chart.labels[i]));
    for (std::size_t j = 0; j < n; ++j) {
      const double v = i < chart.values.size() && j < chart.values[i].size()
                           ? chart.values[i][j]
                           : std::numeric_limits<double>::quiet_NaN();
      const int x = label_w + static_cast<int>(j) * cell;
      const bool ok = std::isfinite(v);
      // Log scale when every value is positive: a link 100x slower stands apart from one 2x slower.
      const bool log_scale = lo > 0;
      const double t = !(hi > lo)  ? 1.0
                       : log_scale ? std::log(v / lo) / std::log(hi / lo)
                                   : (v - lo) / (hi - lo);
      const std::string fill = !ok ? "#e5e7eb" : ramp(t);
      const std::string tip =
          ok ? fmt::format("{} → {}: {:.4g} {}", chart.labels[i], chart.labels[j], v, chart.unit)
             : fmt::format("{} → {}: n/a", chart.labels[i], chart.labels[j]);
      out += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
          "stroke=\"#fff\"><title>{}</title></rect>\n",
          x, y, cell, cell, fill, xml_escape(tip));
      if (text && ok)
        out += fmt::format(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" style=\"font-size:9px\">{:.3g}</text>\n",
            x + cell / 2, y + cell / 2 + 3, v);
    }
  }
  // Legend: the ramp from the lowest to the highest value.
  const int ly = top + static_cast<int>(n) * cell + 14;
  for (int k = 0; k < 10; ++k)
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"10\" fill=\"{}\"/>\n", label_w + k * 16,
                       ly, ramp(k / 9.0));
  if (std::isfinite(lo))
    out += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g} {}</text>\n<text x=\"{}\" y=\"{}\">{:.3g} "
        "{}</text>\n",
        label_w - 4, ly + 9, lo, xml_escape(chart.unit), label_w + 164, ly + 9, hi, xml_escape(chart.unit));
  return out + "</svg>\n";
}

}  // namespace fb::reports::svg
