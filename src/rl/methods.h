// Which policy each learned method trains (rl/methods.cc is the registry).
#pragma once

#include <memory>

#include "rl/policy.h"
#include "rl/rl_placer.h"

namespace devplace {

// Whether out-of-memory placements are graded by how far they overflow
// (RlOptions::failing_signal, or the method's default when not given).
bool GradesFailures(const RlOptions& options);

// The policy of `options.method`, built for `problem`; torch's global seed
// must be set first (its parameters start random). Throws Error for an
// unknown method or a problem the method cannot place.
std::unique_ptr<Policy> MakePolicy(const PlacementProblem& problem, const RlOptions& options);

}  // namespace devplace
