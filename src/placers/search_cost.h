// How the searches (mcmc, exact) rank simulated placements and choose where
// to start. The order is lexicographic, because a placement out of memory is
// no answer however fast it would be: any placement that fits beats any that
// does not; among those out of memory, the one that overflows less is better
// (so a search that starts or strays there is led toward fitting); step time
// breaks ties. A placement that cannot run at all (invalid, or a failed real
// run) is worst.
#pragma once

#include <vector>

#include "cluster/cluster.h"
#include "placers/placer.h"
#include "sim/simulator.h"

namespace devplace {

// Bytes beyond each device's usable memory, summed over the devices: 0 for
// a placement that fits. In doubles, so that a saturated peak
// (kSaturatedBytes) adds up without wrapping.
double MemoryOverflowBytes(const SimResult& result, const Cluster& cluster);

struct SearchCost {
  enum class Tier { kFits = 0, kOutOfMemory = 1, kCannotRun = 2 };
  Tier tier = Tier::kCannotRun;
  double overflow_bytes = 0;  // 0 unless out of memory
  double step_time_us = 0;

  bool fits() const { return tier == Tier::kFits; }
};

SearchCost SearchCostOf(const SimResult& result, const Cluster& cluster);

// a ranks strictly before b in the order above.
bool Better(const SearchCost& a, const SearchCost& b);

// The Metropolis test across the tiers: the probability that a chain at
// `current` moves to `next`.
// - To a better tier, 1; to a worse one, 0 (a chain that fits never steps
//   out of memory again; one out of memory never steps to a placement that
//   cannot run).
// - Both fit: 1 if no slower, else exp(-time_alpha x relative slowdown).
// - Both out of memory with different overflow: 1 if less, else
//   exp(-overflow increase / overflow_scale_bytes). The scale is in the
//   bytes one move shifts (mcmc: a quarter of a unit's mean memory), so the
//   chain drifts toward fitting yet can climb out of a packing that is one
//   swap from fitting, which an acceptance relative to the current
//   overflow would all but forbid.
//   With equal overflow, step time decides as when both fit.
// - Neither can run: 1 (nothing tells them apart).
double AcceptanceProbability(const SearchCost& current, const SearchCost& next, double time_alpha,
                             double overflow_scale_bytes);

// Of `runs` (RunPlacers' output), the first best by SearchCost: the fastest
// that fits, else the one that overflows least. nullptr when `runs` is
// empty.
const PlacerRun* BestStart(const std::vector<PlacerRun>& runs, const Cluster& cluster);

}  // namespace devplace
