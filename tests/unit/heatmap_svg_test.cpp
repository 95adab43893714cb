#include "reports/heatmap_svg.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <string>

#include "reports/report_printers.hpp"

namespace fb::reports {
namespace {

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(HeatmapSvgTest, OneCellPerEntryColouredByValue) {
  svg::Heatmap h;
  h.title = "p2p <bw>";
  h.unit = "GB/s";
  h.labels = {"a", "b", "c"};
  const double nan = std::nan("");
  h.values = {{nan, 10, 1}, {10, nan, 10}, {5.5, 10, nan}};
  const auto out = svg::render(h);
  EXPECT_EQ(out.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(out, "<svg"), 1u);
  EXPECT_NE(out.find("p2p &lt;bw&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(count(out, "<title>"), 9u);                      // 3 x 3 cells
  EXPECT_EQ(count(out, "fill=\"#e5e7eb\""), 3u);             // the NaN diagonal
  EXPECT_EQ(count(out, "fill=\"#d73027\""), 1u + 1u);        // the lowest cell (1) and the legend's low end
  EXPECT_EQ(count(out, "fill=\"#1a9850\""), 4u + 1u);  // the highest cells (10) and the legend's high end
  EXPECT_NE(out.find("<title>a → c: 1 GB/s</title>"), std::string::npos);
  EXPECT_NE(out.find("<title>c → a: 5.5 GB/s</title>"), std::string::npos);
}

// Every cell lies inside the canvas however many endpoints there are: past about 85 the canvas grows (it
// used to keep its 760 width and cut off the last columns, a slow node among them).
TEST(HeatmapSvgTest, EveryCellFitsTheCanvasAtAnySize) {
  for (const std::size_t n : {3u, 128u}) {
    svg::Heatmap h;
    h.title = "p2p";
    for (std::size_t i = 0; i < n; ++i) {
      h.labels.push_back("node" + std::to_string(i));
      h.values.emplace_back(n, 1.0);
    }
    const auto out = svg::render(h);
    std::smatch vb;
    ASSERT_TRUE(std::regex_search(out, vb, std::regex("viewBox=\"0 0 ([0-9]+) ([0-9]+)\"")));
    const double width = std::stod(vb[1]);
    double right = 0;
    const std::regex rect("<rect x=\"([0-9.]+)\" y=\"[0-9.]+\" width=\"([0-9.]+)\"");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), rect); it != std::sregex_iterator(); ++it)
      right = std::max(right, std::stod((*it)[1]) + std::stod((*it)[2]));
    EXPECT_LE(right, width) << n << " endpoints";
    EXPECT_NE(out.find("max-width:100%"), std::string::npos);
  }
}

TEST(HeatmapSvgTest, HtmlReportDrawsAHeatmapForAResultWithAMatrix) {
  Report rep;
  rep.run = {{"id", "r1"}, {"command", "locate"}};
  Result r;
  r.benchmark = "locate";
  r.name = "p2p/rank/1048576";
  r.extra["matrix"] = {{"labels", {"h0 (rank 0, GPU 0)", "h1 (rank 1, GPU 0)"}},
                       {"bw_gbps", {{nullptr, 3.0}, {2.0, nullptr}}}};
  rep.results.push_back(r);
  const auto html = render_html({{"r.json", rep}});
  EXPECT_NE(html.find("id=\"matrix-0-"), std::string::npos);
  EXPECT_NE(html.find("<title>h1 (rank 1, GPU 0) → h0 (rank 0, GPU 0): 2 GB/s</title>"), std::string::npos);
  // A result without a matrix draws none.
  rep.results[0].extra.erase("matrix");
  EXPECT_EQ(render_html({{"r.json", rep}}).find("id=\"matrix-"), std::string::npos);
}

}  // namespace
}  // namespace fb::reports
