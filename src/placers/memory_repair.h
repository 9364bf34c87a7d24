// Making a placement fit in memory: partitioners balance compute and cut
// bytes but know nothing of capacity, so their placements are simulated and,
// while a device runs out of memory, groups move from it to the device with
// the most room left.
#pragma once

#include <string>

#include "graph/grouping.h"
#include "placers/placer.h"

namespace devplace {

// Moves whole groups of `grouping` (so co-location holds) until the
// simulated step fits or no move helps. Returns the placement; sets `note`
// when it still does not fit.
Placement RepairMemory(const PlacementProblem& problem, const Grouping& grouping, std::vector<int32_t> device_of_group,
                       std::string& note);

}  // namespace devplace
