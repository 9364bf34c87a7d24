// Exploration by coherent moves (ours; no paper has it): GDP's policy draws
// every unit's device independently, so a sample strays from the policy's
// mode by scattered single units, and on a pipeline-shaped graph almost
// every scattered move makes the step slower.
// The better placements often differ from the start by a whole stretch of
// the network on another device (HDP finds them by moving a group;
// BENCHMARKS.md, GDP-one). A window move takes a drawn decision and puts one
// window of the units' locality order (OpFeatures::unit_position) on one
// fast device: a few such samples per update try coherent moves, and PPO
// raises the probability of every unit of a move that paid. (Windows of the
// topological order instead, or drawn from both orders, did worse on GNMT-2
// and GNMT-4; docs/rl.md.)
// No torch here.
#pragma once

#include <cstdint>
#include <vector>

#include "learned/policies/unit_decisions.h"
#include "util/random.h"

namespace devplace {

class WindowMoves {
 public:
  // `share`: the share of each update's samples that get a move, in [0, 1].
  WindowMoves(const UnitDecisions& units, double share);

  // How many of `samples` draws get a move (the last ones of the update).
  int64_t MovedSamples(int64_t samples) const;

  // Puts a window of the locality order on one fast device: its length in
  // units log-uniform from 1 to half the units, its place uniform, the
  // device uniform among the fast devices other than the one the window's
  // first unit has. Units that may not run there keep their device.
  void Apply(std::vector<int32_t>& decision, Random& random) const;

 private:
  const UnitDecisions* units_;
  double share_;
  std::vector<int32_t> units_by_position_;  // the locality order
};

}  // namespace devplace
