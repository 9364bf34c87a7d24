// The graph coloured by device, as in Figures 4 and 5 of the 2017 paper, in
// a form that stays readable for tens of thousands of ops: one node per
// co-location group, laid out left to right by the depth of its forward ops,
// split into a coloured segment per device its ops run on.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/grouping.h"
#include "sim/placement.h"

namespace devplace {

struct GraphViewOptions {
  int32_t max_columns = 60;      // depths beyond this share columns
  double display_width_px = 1000;
  double max_display_height_px = 640;
  double min_display_height_px = 160;
};

// Where each group sits: its column (by depth) and row within the column.
struct GraphLayout {
  std::vector<int32_t> column;  // per group
  std::vector<int32_t> row;     // per group, 0 at the top of its column
  int32_t num_columns = 0;
  int32_t max_rows = 0;
};

// Layered layout of `grouping`'s groups: a group's column is the median
// topological depth of its forward ops (all its ops if it has none), so
// a layer's backward and update ops, which share its co-location group, sit
// where its forward pass is; rows follow their predecessors' rows (one
// barycentre pass) so edges cross little.
GraphLayout LayoutGroups(const Graph& graph, const Grouping& grouping, int32_t max_columns);

// `colors` has one colour per device; `device_names` names them.
std::string GraphViewSvg(const Graph& graph, const Grouping& grouping, const Placement& placement,
                         const std::vector<std::string>& colors, const std::vector<std::string>& device_names,
                         const GraphViewOptions& options = {});

}  // namespace devplace
