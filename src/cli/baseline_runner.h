// Running the baselines and searches on one graph and cluster and
// simulating each placement into a Comparison table: the work `devplace
// compare` and `devplace report` share (`place` runs one method of any
// kind with RunMethod, methods/run_method.h).
#pragma once

#include <string>
#include <vector>

#include "placers/placer.h"
#include "report/compare_table.h"

namespace devplace {

// The baselines and searches called `names` (methods/method_registry.h), in
// that order; every one if `names` is empty. Throws Error on an unknown name,
// before any slow work.
std::vector<const PlacerInfo*> PlacersByName(const std::vector<std::string>& names);

// Each placer's placement, how long it took, and its simulated step; with
// `progress`, a "placing with NAME..." line on stderr before each. Checks
// CheckClusterCanRun (placers/placer.h) first. A placer that refuses (throws
// Error) goes to Comparison::refused with its message instead.
Comparison CompareMethods(const PlacementProblem& problem, const std::vector<const PlacerInfo*>& placers, bool progress);

}  // namespace devplace
