#include "report/graph_view_svg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "report/sim_report.h"
#include "report/svg.h"
#include "util/format_bytes.h"

namespace devplace {
namespace {

constexpr double kMargin = 16, kColumnStep = 44, kRowStep = 14, kNodeWidth = 18, kNodeHeight = 10;

// Longest path from a source, over data and control edges; a source (a
// weight, an input) sits just before its first consumer instead, or every
// layer's weights would pull its group to depth 0.
std::vector<int32_t> OpDepths(const Graph& graph) {
  std::vector<int32_t> depth(graph.num_ops(), 0);
  auto successors = [&](int32_t op, auto visit) {
    for (int32_t e : graph.out_data_edges(op)) visit(graph.data_edges()[e].dst);
    for (int32_t dst : graph.control_successors(op)) visit(dst);
  };
  for (int32_t op : graph.topological_order()) {
    successors(op, [&](int32_t dst) { depth[dst] = std::max(depth[dst], depth[op] + 1); });
  }
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    if (!graph.in_data_edges(op).empty() || !graph.control_predecessors(op).empty()) continue;
    int32_t first_use = std::numeric_limits<int32_t>::max();
    successors(op, [&](int32_t dst) { first_use = std::min(first_use, depth[dst]); });
    if (first_use != std::numeric_limits<int32_t>::max()) depth[op] = std::max(0, first_use - 1);
  }
  return depth;
}

}  // namespace

GraphLayout LayoutGroups(const Graph& graph, const Grouping& grouping, int32_t max_columns) {
  const int32_t G = grouping.num_groups();
  GraphLayout layout;
  layout.column.assign(G, 0);
  layout.row.assign(G, 0);
  if (G == 0) return layout;
  const std::vector<int32_t> depth = OpDepths(graph);
  // The median, not the minimum: a group's constants and shape ops sit at
  // depth 0 or 1 however late its real work runs.
  std::vector<int32_t> key(G);
  std::vector<int32_t> depths;
  for (int32_t g = 0; g < G; ++g) {
    depths.clear();
    for (int32_t op : grouping.groups[g].ops) {
      if (graph.op(op).phase == Phase::kForward) depths.push_back(depth[op]);
    }
    if (depths.empty()) {
      for (int32_t op : grouping.groups[g].ops) depths.push_back(depth[op]);
    }
    std::nth_element(depths.begin(), depths.begin() + depths.size() / 2, depths.end());
    key[g] = depths[depths.size() / 2];
  }
  std::vector<int32_t> distinct = key;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  const int64_t levels = static_cast<int64_t>(distinct.size());
  const int64_t columns = std::min<int64_t>(levels, std::max(1, max_columns));
  for (int32_t g = 0; g < G; ++g) {
    const int64_t rank = std::lower_bound(distinct.begin(), distinct.end(), key[g]) - distinct.begin();
    layout.column[g] = static_cast<int32_t>(rank * columns / levels);
  }
  layout.num_columns = static_cast<int32_t>(columns);

  std::vector<std::vector<int32_t>> members(columns);
  for (int32_t g = 0; g < G; ++g) members[layout.column[g]].push_back(g);
  for (const auto& m : members) layout.max_rows = std::max(layout.max_rows, static_cast<int32_t>(m.size()));
  std::vector<std::vector<int32_t>> predecessors(G);
  for (const GroupEdge& e : grouping.edges) {
    if (layout.column[e.src] < layout.column[e.dst]) predecessors[e.dst].push_back(e.src);
  }
  // Rows are centred in their column; `position` is the centred row, which
  // is what a successor's barycentre averages.
  std::vector<double> position(G, 0);
  for (auto& column : members) {
    const double offset = (layout.max_rows - static_cast<double>(column.size())) / 2;
    std::vector<std::pair<double, int32_t>> order;
    for (size_t i = 0; i < column.size(); ++i) {
      const int32_t g = column[i];
      double sum = 0;
      for (int32_t p : predecessors[g]) sum += position[p];
      order.emplace_back(predecessors[g].empty() ? offset + i : sum / predecessors[g].size(), g);
    }
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t r = 0; r < order.size(); ++r) {
      layout.row[order[r].second] = static_cast<int32_t>(r);
      position[order[r].second] = offset + r;
    }
  }
  return layout;
}

std::string GraphViewSvg(const Graph& graph, const Grouping& grouping, const Placement& placement,
                         const std::vector<std::string>& colors, const std::vector<std::string>& device_names,
                         const GraphViewOptions& options) {
  const GraphLayout layout = LayoutGroups(graph, grouping, options.max_columns);
  const int32_t G = grouping.num_groups();
  std::vector<int32_t> column_size(layout.num_columns, 0);
  for (int32_t g = 0; g < G; ++g) ++column_size[layout.column[g]];
  auto x_of = [&](int32_t g) { return kMargin + layout.column[g] * kColumnStep; };
  auto y_of = [&](int32_t g) {
    const double offset = (layout.max_rows - column_size[layout.column[g]]) / 2.0;
    return kMargin + (offset + layout.row[g]) * kRowStep;
  };
  const double width = 2 * kMargin + std::max(0, layout.num_columns - 1) * kColumnStep + kNodeWidth;
  const double height = 2 * kMargin + std::max(0, layout.max_rows - 1) * kRowStep + kNodeHeight;
  SvgBuilder svg("graph-view", width, height, "zoomable");
  // Fit the whole graph in the display width, and cap its height.
  double scale = options.display_width_px / width;
  if (height * scale > options.max_display_height_px) scale = options.max_display_height_px / height;
  // A long chain of groups would be a sliver: keep room to zoom into.
  svg.SetDisplaySize(width * scale, std::max(height * scale, options.min_display_height_px));

  // Edges first, under the nodes; only those that run left to right (the
  // rest are gradients flowing back to a layer's own group).
  int64_t max_bytes = 1;
  for (const GroupEdge& e : grouping.edges) max_bytes = std::max(max_bytes, e.bytes);
  SvgStyle edge_style;
  edge_style.stroke = "#8a8a8a";
  edge_style.opacity = 0.45;
  edge_style.mark = false;
  for (const GroupEdge& e : grouping.edges) {
    if (layout.column[e.src] >= layout.column[e.dst]) continue;
    const double x1 = x_of(e.src) + kNodeWidth, y1 = y_of(e.src) + kNodeHeight / 2;
    const double x2 = x_of(e.dst), y2 = y_of(e.dst) + kNodeHeight / 2;
    const double xm = (x1 + x2) / 2;
    edge_style.stroke_width = 0.5 + 2.0 * std::sqrt(static_cast<double>(e.bytes) / max_bytes);
    svg.Path("M" + Num(x1) + " " + Num(y1) + "C" + Num(xm) + " " + Num(y1) + " " + Num(xm) + " " + Num(y2) + " " +
                 Num(x2) + " " + Num(y2),
             edge_style);
  }

  for (int32_t g = 0; g < G; ++g) {
    const Group& group = grouping.groups[g];
    std::map<int32_t, int32_t> ops_on;  // device -> ops of this group there
    for (int32_t op : group.ops) ++ops_on[placement[op]];
    std::string tooltip = group.name + ": " + std::to_string(group.ops.size()) + " ops, " +
                          Num(group.flops / 1e9, 3) + " GFLOPs, " + FormatBytes(group.persistent_bytes) + " parameters;";
    for (const auto& [device, count] : ops_on) {
      tooltip += " " + device_names[device] + " " + std::to_string(count) + " ops";
    }
    svg.Raw("<g class=\"node\"><title>" + XmlEscape(tooltip) + "</title>");
    double x = x_of(g);
    for (const auto& [device, count] : ops_on) {
      const double w = kNodeWidth * count / static_cast<double>(group.ops.size());
      SvgStyle style;
      style.fill = colors[device];
      svg.Rect(x, y_of(g), w, kNodeHeight, style);
      x += w;
    }
    SvgStyle outline;
    outline.stroke = "#333";
    outline.stroke_width = 0.4;
    outline.mark = false;
    svg.Rect(x_of(g), y_of(g), kNodeWidth, kNodeHeight, outline);
    svg.CloseGroup();
  }
  return svg.Finish();
}

}  // namespace devplace
