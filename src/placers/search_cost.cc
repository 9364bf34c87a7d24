#include "placers/search_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace devplace {

double MemoryOverflowBytes(const SimResult& result, const Cluster& cluster) {
  double over_bytes = 0;
  for (size_t d = 0; d < result.devices.size() && d < cluster.devices.size(); ++d) {
    const double peak = static_cast<double>(result.devices[d].peak_memory_bytes);
    over_bytes += std::max(0.0, peak - static_cast<double>(cluster.devices[d].usable_memory_bytes()));
  }
  return over_bytes;
}

SearchCost SearchCostOf(const SimResult& result, const Cluster& cluster) {
  SearchCost cost;
  cost.step_time_us = result.step_time_us;
  if (result.invalid || result.failed) {
    cost.tier = SearchCost::Tier::kCannotRun;
  } else if (result.oom) {
    cost.tier = SearchCost::Tier::kOutOfMemory;
    // Never 0 for a placement out of memory: the simulator may call a
    // device out of memory at a peak that rounds to its capacity.
    cost.overflow_bytes = std::max(1.0, MemoryOverflowBytes(result, cluster));
  } else {
    cost.tier = SearchCost::Tier::kFits;
  }
  return cost;
}

bool Better(const SearchCost& a, const SearchCost& b) {
  if (a.tier != b.tier) return a.tier < b.tier;
  if (a.tier == SearchCost::Tier::kCannotRun) return false;
  if (a.overflow_bytes != b.overflow_bytes) return a.overflow_bytes < b.overflow_bytes;
  return a.step_time_us < b.step_time_us;
}

double AcceptanceProbability(const SearchCost& current, const SearchCost& next, double time_alpha,
                             double overflow_scale_bytes) {
  if (next.tier != current.tier) return next.tier < current.tier ? 1 : 0;
  if (current.tier == SearchCost::Tier::kCannotRun) return 1;
  if (next.overflow_bytes != current.overflow_bytes) {
    if (next.overflow_bytes < current.overflow_bytes) return 1;
    return std::exp(-(next.overflow_bytes - current.overflow_bytes) / std::max(overflow_scale_bytes, 1.0));
  }
  if (next.step_time_us <= current.step_time_us) return 1;
  return std::exp(-time_alpha * (next.step_time_us - current.step_time_us) / std::max(current.step_time_us, 1e-9));
}

const PlacerRun* BestStart(const std::vector<PlacerRun>& runs, const Cluster& cluster) {
  const PlacerRun* best = nullptr;
  SearchCost best_cost;
  for (const PlacerRun& run : runs) {
    const SearchCost cost = SearchCostOf(run.result, cluster);
    if (!best || Better(cost, best_cost)) {
      best = &run;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace devplace
