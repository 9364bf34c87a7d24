// Which policy each learned method trains (learned/methods.cc is the registry).
#pragma once

#include <memory>

#include "learned/policies/policy.h"
#include "learned/learned_placer.h"

namespace devplace {

// Whether out-of-memory placements are graded by how far they overflow
// (LearnedOptions::failing_signal, or the method's default when not given).
bool GradesFailures(const LearnedOptions& options);

// The policy of `options.method`, built for `problem`; torch's global seed
// must be set first (its parameters start random). Throws Error for an
// unknown method or a problem the method cannot place.
std::unique_ptr<Policy> MakePolicy(const PlacementProblem& problem, const LearnedOptions& options);

}  // namespace devplace
