// The report's two generic charts as SVG: grouped stacked bars (per-device
// load, as in Figures 8 and 9 of the 2017 paper) and lines (search curves,
// memory over the step). Values are drawn in the unit the caller gives.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace devplace {

struct LegendEntry {
  std::string label;
  std::string color;
};

struct BarSegment {
  double value = 0;
  std::string color;
  std::string tooltip;
};

// One stacked bar; segments stack bottom-up in order.
struct Bar {
  std::string label;  // under the bar ("best", "expert")
  std::vector<BarSegment> segments;
};

// Bars side by side under one label (a device).
struct BarGroup {
  std::string label;
  std::vector<Bar> bars;
};

struct BarChartSpec {
  std::string id;
  std::string y_label;
  std::vector<BarGroup> groups;
  std::vector<LegendEntry> legend;
  double y_reference = -1;  // a dotted horizontal line (e.g. 100% of capacity); < 0: none
  std::string y_reference_label;
};

std::string StackedBarChart(const BarChartSpec& spec);

using Point = std::pair<double, double>;

struct LineSeries {
  std::string name;
  std::string color;
  std::vector<Point> points;  // in increasing x
  bool dashed = false;
};

struct LineChartSpec {
  std::string id;
  std::string x_label;
  std::string y_label;
  std::vector<LineSeries> series;
  bool y_from_zero = false;   // else the axis spans the data
  double y_reference = -1;    // a dotted horizontal line (e.g. 100% of capacity); < 0: none
  std::string y_reference_label;
};

std::string LineChart(const LineChartSpec& spec);

// At most about `max_points` of `points` (sorted by x) that keep the shape: the
// lowest and highest point of each of max_points / 2 equal x ranges, in x
// order. Short series come back unchanged.
std::vector<Point> Downsample(const std::vector<Point>& points, size_t max_points);

}  // namespace devplace
