// Reading the output folder of a `devplace place` run for the report: its
// search curve (curve.csv, one row per policy update, written by
// src/learned/training/place_trainer.cc) and its best placement (best_placement.json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "sim/placement.h"

namespace devplace {

struct CurvePoint {
  int64_t step = 0;
  double seconds = 0;           // wall time of the search so far
  double mean_step_time_s = 0;  // of that update's placements that ran; 0 if none did
  double best_step_time_s = 0;  // best so far; 0 until a placement ran
  int64_t samples = -1;         // placements measured so far; -1 when the curve has no such column
};

// Parses curve.csv text. Columns are found by their header names (step,
// seconds, mean_step_time_s, best_step_time_s, and samples when there is
// one; others are ignored). A last
// line without its newline is a row the run is still writing and is
// skipped if incomplete. Throws Error naming `source` and the line.
std::vector<CurvePoint> ParseSearchCurve(const std::string& text, const std::string& source);

struct RunFolder {
  std::string path;
  std::vector<CurvePoint> curve;      // empty if the run has no curve.csv (a baseline run)
  std::optional<Placement> placement; // absent until some placement ran
  std::string placement_file;
};

// Reads `folder`. Throws Error if it is not a folder, holds neither file, or
// its placement is for another graph or cluster.
RunFolder LoadRunFolder(const std::string& folder, const Graph& graph, const Cluster& cluster);

}  // namespace devplace
