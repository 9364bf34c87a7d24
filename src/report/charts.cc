#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "report/svg.h"

namespace devplace {
namespace {

constexpr double kLeft = 64, kTop = 16, kPlotHeight = 240, kLegendWidth = 170;

SvgStyle Decoration(const std::string& stroke, const std::string& dash = "") {
  SvgStyle s;
  s.stroke = stroke;
  s.dash = dash;
  s.mark = false;
  return s;
}

void DrawLegend(SvgBuilder& svg, double x, const std::vector<LegendEntry>& legend) {
  double y = kTop + 4;
  for (const LegendEntry& entry : legend) {
    SvgStyle swatch;
    swatch.fill = entry.color;
    swatch.mark = false;
    svg.Rect(x, y, 12, 12, swatch);
    svg.Text(x + 18, y + 10, entry.label);
    y += 18;
  }
}

// Horizontal grid lines and labels for `ticks` on a y axis from 0 (or
// y_low) at the bottom of the plot to y_high at its top.
void DrawYAxis(SvgBuilder& svg, double plot_width, double y_low, double y_high, const std::vector<double>& ticks,
               const std::string& label) {
  for (double t : ticks) {
    double y = kTop + kPlotHeight - (t - y_low) / (y_high - y_low) * kPlotHeight;
    svg.Line(kLeft, y, kLeft + plot_width, y, Decoration("#e4e4e4"));
    svg.Text(kLeft - 6, y + 4, TickLabel(t), "end");
  }
  svg.Line(kLeft, kTop, kLeft, kTop + kPlotHeight, Decoration("#888"));
  svg.Line(kLeft, kTop + kPlotHeight, kLeft + plot_width, kTop + kPlotHeight, Decoration("#888"));
  svg.Raw("<text transform=\"translate(14," + Num(kTop + kPlotHeight / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
          XmlEscape(label) + "</text>");
}

void NoDataNote(SvgBuilder& svg, double plot_width, const std::string& what) {
  svg.Text(kLeft + plot_width / 2, kTop + kPlotHeight / 2, what, "middle", 13, "no-data");
}

}  // namespace

std::string StackedBarChart(const BarChartSpec& spec) {
  constexpr double kBarWidth = 30, kBarGap = 4, kGroupGap = 26;
  size_t bars = 0;
  double total_max = 0;
  for (const BarGroup& group : spec.groups) {
    bars = std::max(bars, group.bars.size());
    for (const Bar& bar : group.bars) {
      double total = 0;
      for (const BarSegment& s : bar.segments) total += std::max(s.value, 0.0);
      total_max = std::max(total_max, total);
    }
  }
  const double group_width = bars * (kBarWidth + kBarGap) - kBarGap;
  const double plot_width = std::max(240.0, spec.groups.size() * (group_width + kGroupGap) + kGroupGap);
  SvgBuilder svg(spec.id, kLeft + plot_width + kLegendWidth, kTop + kPlotHeight + 46);

  const double data_high = std::max(total_max > 0 ? total_max : 1, spec.y_reference);
  std::vector<double> ticks = NiceTicks(0, data_high, 5);
  const double y_high = std::max(ticks.back(), data_high);
  DrawYAxis(svg, plot_width, 0, y_high, ticks, spec.y_label);
  const double per_unit = kPlotHeight / y_high;
  if (spec.y_reference >= 0) {
    const double y = kTop + kPlotHeight - spec.y_reference * per_unit;
    svg.Line(kLeft, y, kLeft + plot_width, y, Decoration("#c00", "2,3"));
    svg.Text(kLeft + plot_width - 4, y - 4, spec.y_reference_label, "end", 10);
  }

  double x = kLeft + kGroupGap;
  for (const BarGroup& group : spec.groups) {
    for (size_t b = 0; b < group.bars.size(); ++b) {
      const Bar& bar = group.bars[b];
      const double bx = x + b * (kBarWidth + kBarGap);
      double y = kTop + kPlotHeight;
      for (const BarSegment& s : bar.segments) {
        if (s.value <= 0) continue;
        const double h = s.value * per_unit;
        SvgStyle style;
        style.fill = s.color;
        style.stroke = "#ffffff";
        style.stroke_width = 0.5;
        svg.Rect(bx, y - h, kBarWidth, h, style, s.tooltip);
        y -= h;
      }
      // Long names would run into the next bar; the caption names them whole.
      std::string label = bar.label.size() > 7 ? bar.label.substr(0, 6) + "." : bar.label;
      svg.Text(bx + kBarWidth / 2, kTop + kPlotHeight + 13, label, "middle", 9);
    }
    svg.Text(x + group_width / 2, kTop + kPlotHeight + 30, group.label, "middle", 12);
    x += group_width + kGroupGap;
  }
  if (total_max <= 0) NoDataNote(svg, plot_width, "nothing to show: every value is zero");
  DrawLegend(svg, kLeft + plot_width + 16, spec.legend);
  return svg.Finish();
}

std::string LineChart(const LineChartSpec& spec) {
  constexpr double kPlotWidth = 520;
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low;
  double y_low = x_low, y_high = -x_low;
  for (const LineSeries& s : spec.series) {
    for (const auto& [x, y] : s.points) {
      x_low = std::min(x_low, x), x_high = std::max(x_high, x);
      y_low = std::min(y_low, y), y_high = std::max(y_high, y);
    }
  }
  SvgBuilder svg(spec.id, kLeft + kPlotWidth + kLegendWidth, kTop + kPlotHeight + 46);
  const bool empty = !std::isfinite(x_low);
  if (empty) x_low = 0, x_high = 1, y_low = 0, y_high = 1;
  if (spec.y_reference >= 0) y_low = std::min(y_low, spec.y_reference), y_high = std::max(y_high, spec.y_reference);
  if (spec.y_from_zero) y_low = std::min(0.0, y_low);
  if (x_high == x_low) x_high = x_low + 1;
  if (y_high == y_low) y_high = y_low + (y_low == 0 ? 1 : std::abs(y_low) * 0.1);
  // Round the y axis out to its ticks, with a little air above the data.
  const double pad = spec.y_from_zero ? 0 : (y_high - y_low) * 0.05;
  std::vector<double> y_ticks = NiceTicks(y_low - pad, y_high + pad, 6);
  if (!y_ticks.empty()) y_low = std::min(y_low - pad, y_ticks.front()), y_high = std::max(y_high + pad, y_ticks.back());
  DrawYAxis(svg, kPlotWidth, y_low, y_high, y_ticks, spec.y_label);

  auto px = [&](double x) { return kLeft + (x - x_low) / (x_high - x_low) * kPlotWidth; };
  auto py = [&](double y) { return kTop + kPlotHeight - (y - y_low) / (y_high - y_low) * kPlotHeight; };
  for (double t : NiceTicks(x_low, x_high, 6)) {
    svg.Line(px(t), kTop + kPlotHeight, px(t), kTop + kPlotHeight + 4, Decoration("#888"));
    svg.Text(px(t), kTop + kPlotHeight + 16, TickLabel(t), "middle");
  }
  svg.Text(kLeft + kPlotWidth / 2, kTop + kPlotHeight + 36, spec.x_label, "middle", 12);
  if (spec.y_reference >= 0) {
    svg.Line(kLeft, py(spec.y_reference), kLeft + kPlotWidth, py(spec.y_reference), Decoration("#c00", "2,3"));
    svg.Text(kLeft + kPlotWidth - 4, py(spec.y_reference) - 4, spec.y_reference_label, "end", 10);
  }

  std::vector<LegendEntry> legend;
  for (const LineSeries& s : spec.series) {
    if (s.points.empty()) continue;
    legend.push_back({s.name, s.color});
    std::vector<Point> scaled;
    for (const auto& [x, y] : s.points) scaled.emplace_back(px(x), py(y));
    SvgStyle style;
    style.stroke = s.color;
    style.stroke_width = 1.5;
    if (s.dashed) style.dash = "6,4";
    if (scaled.size() == 1) {
      style.fill = s.color;
      svg.Rect(scaled[0].first - 2.5, scaled[0].second - 2.5, 5, 5, style, s.name);
    } else {
      svg.Polyline(scaled, style, s.name);
    }
  }
  if (empty) NoDataNote(svg, kPlotWidth, "no data points");
  DrawLegend(svg, kLeft + kPlotWidth + 16, legend);
  return svg.Finish();
}

std::vector<Point> Downsample(const std::vector<Point>& points, size_t max_points) {
  if (points.size() <= max_points || max_points < 4) return points;
  const size_t buckets = max_points / 2;
  const double x_low = points.front().first, x_high = points.back().first;
  const double width = (x_high - x_low) / buckets;
  std::vector<Point> out;
  size_t i = 0;
  for (size_t b = 0; b < buckets && i < points.size(); ++b) {
    const double end = b + 1 == buckets ? std::numeric_limits<double>::infinity() : x_low + (b + 1) * width;
    size_t low = i, high = i;
    for (; i < points.size() && points[i].first <= end; ++i) {
      if (points[i].second < points[low].second) low = i;
      if (points[i].second > points[high].second) high = i;
    }
    if (i == low) {  // the bucket is empty: its range holds no point
      continue;
    }
    out.push_back(points[std::min(low, high)]);
    if (low != high) out.push_back(points[std::max(low, high)]);
  }
  return out;
}

}  // namespace devplace
