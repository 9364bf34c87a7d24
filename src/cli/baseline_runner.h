// Running the baselines and searches on one graph and cluster and
// simulating each placement into a Comparison table: the work `devplace
// compare` and `devplace report` share (`place` runs one method of any
// kind with RunMethod, methods/run_method.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "placers/placer.h"
#include "report/compare_table.h"

namespace devplace {

// The baselines and searches called `names` (methods/method_registry.h), in
// that order; every one if `names` is empty. Throws Error on an unknown name,
// before any slow work.
std::vector<const PlacerInfo*> PlacersByName(const std::vector<std::string>& names);

// One method's row, or why it has none.
struct ComparedMethod {
  std::optional<MethodResult> row;
  std::optional<RefusedMethod> refused;
};

// `placer`'s placement, how long it took and its simulated step (or its
// refusal); with `progress`, a "placing with NAME..." line on stderr first.
ComparedMethod CompareOne(const PlacementProblem& problem, const PlacerInfo& placer, bool progress);

// A table with no rows yet: the graph, cluster and lower bound. Checks
// CheckClusterCanRun (placers/placer.h).
Comparison EmptyComparison(const PlacementProblem& problem);
// Appends `compared`'s row or refusal; the table keeps the order they come in.
void AddCompared(Comparison& comparison, ComparedMethod compared);

// Each placer's placement, how long it took, and its simulated step; with
// `progress`, a "placing with NAME..." line on stderr before each. Checks
// CheckClusterCanRun (placers/placer.h) first. A placer that refuses (throws
// Error) goes to Comparison::refused with its message instead.
Comparison CompareMethods(const PlacementProblem& problem, const std::vector<const PlacerInfo*>& placers, bool progress);

}  // namespace devplace
