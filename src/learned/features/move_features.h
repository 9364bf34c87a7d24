// What a learned proposal reads of one candidate move (a unit to another
// device) in the current state of a search: how much of the unit's traffic
// the move brings onto one device or takes off it, how busy and how full
// the two devices are, and how fast each runs the unit. Every feature is a
// ratio or a bounded log-ratio, so one scorer reads graphs and clusters of
// any size. No torch here.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/grouping.h"
#include "sim/placement.h"
#include "sim/simulator.h"

namespace devplace {

inline constexpr int kMoveFeatures = 12;
using MoveFeatureRow = std::array<float, kMoveFeatures>;

// The units a search moves (co-location groups) and what moves read of
// them, computed once per graph and cluster.
class MoveFeatureContext {
 public:
  // `grouping` must outlive the context.
  MoveFeatureContext(const Graph& graph, const Cluster& cluster, const CostModel& cost, const Grouping& grouping);

  const Grouping& grouping() const { return grouping_; }
  // Time of unit `g` on device `d`, in microseconds (kCannotRun if it cannot).
  double UnitTimeUs(int32_t g, int32_t d) const { return unit_time_us_[static_cast<size_t>(g) * devices_ + d]; }
  int64_t UnitBytes(int32_t g) const { return unit_bytes_[g]; }

  // Appends to `rows` the features of moving unit `g` from its device in
  // `placement` to each of `targets`, given `result`, the run of
  // `placement`. The unit's traffic by device is summed once for all of
  // them.
  void AppendRows(int32_t g, std::span<const int32_t> targets, const Placement& placement, const SimResult& result,
                  std::vector<MoveFeatureRow>& rows) const;

 private:
  struct Neighbour {
    int32_t group;
    int64_t bytes;
  };
  const Cluster& cluster_;
  const Grouping& grouping_;
  int32_t devices_ = 0;
  std::vector<std::vector<Neighbour>> in_, out_;
  std::vector<int64_t> in_bytes_, out_bytes_;
  std::vector<double> unit_time_us_;
  std::vector<int64_t> unit_bytes_;
  double mean_unit_time_us_ = 1;
};

}  // namespace devplace
