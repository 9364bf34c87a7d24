// `devplace report`: one self-contained HTML page (inline CSS, SVG and a
// small script; nothing fetched) with the comparison table, the search
// curve, per-device load, copies and memory, the step's timeline and the
// graph coloured by device.
#pragma once

#include <optional>
#include <string>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "graph/grouping.h"
#include "report/compare_table.h"
#include "report/search_curve.h"
#include "sim/simulator.h"

namespace devplace {

// A placement the report looks at closely.
struct ReportedPlacement {
  std::string label;    // its row in the comparison ("m_sct", "run")
  Placement placement;
  SimResult result;     // the analysed one needs record_events
};

struct ReportInput {
  const Graph& graph;
  const Cluster& cluster;
  const Comparison& comparison;   // every method's row, the run's included
  ReportedPlacement analysed;     // the best baseline, or the run's placement
  std::optional<ReportedPlacement> reference;  // drawn beside it in the per-device charts
  const RunFolder* run = nullptr; // adds the search curve
  std::string trace_href;         // a link to the step's Chrome trace; empty: none
  // More runs on the same graph and cluster (other methods, seeds, a
  // pre-trained encoder or none): their best-so-far curves overlaid, against
  // samples and wall time. The first is `run` when there is one.
  std::vector<const RunFolder*> overlaid;
};

std::string HtmlReport(const ReportInput& input);

}  // namespace devplace
