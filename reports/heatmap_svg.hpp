#pragma once
// A square matrix as an SVG heatmap (issue 17: locate's point-to-point bandwidth matrix). Cells are
// coloured from red (the lowest value) through amber to green (the highest), on a log scale when all values
// are positive (bandwidths of a bad link are orders of magnitude apart); NaN cells (the diagonal,
// unmeasured pairs) are grey. Each cell carries its value as a <title> tooltip and, when the matrix is
// small enough, as text. Self-contained like svg_chart.hpp.
#include <string>
#include <vector>

namespace fb::reports::svg {

struct Heatmap {
  std::string title;
  std::string unit;                         // "GB/s"
  std::vector<std::string> labels;          // one per row and column
  std::vector<std::vector<double>> values;  // [row][column]
  int width = 760;
};

std::string render(const Heatmap& chart);

}  // namespace fb::reports::svg
