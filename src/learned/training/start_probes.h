// A policy's start probes (Policy::StartProbes), measured as samples of the
// search, for both modes of the training loop: they count in its budget,
// one may be its first best, and the policy chooses its start from their
// times.
#pragma once

#include <vector>

#include "learned/policies/policy.h"
#include "sim/environment.h"

namespace devplace {

struct MeasuredProbes {
  std::vector<Placement> placements;
  std::vector<Outcome> outcomes;
};

// Measures `policy`'s probes on `environment` (batch -1: noise seeds of
// their own, apart from every update's) and lets it choose its start. None
// when the policy has no probes.
MeasuredProbes MeasureStartProbes(Policy& policy, Environment& environment);

}  // namespace devplace
