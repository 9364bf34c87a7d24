// A warm start (`place --warm-start`, an option, not the default): before
// RL, the policy imitates a placement: a placement file, a baseline method,
// or "best", the fastest baseline.
#pragma once

#include <torch/torch.h>

#include "learned/policies/policy.h"
#include "placers/placer.h"
#include "sim/environment.h"

namespace devplace {

struct LearnedOptions;

// The placement options.warm_start names: a placement file, a baseline
// method, or "best": the fastest baseline that runs on `environment`, else
// the one the simulator says overflows memory least (a real run does not
// say how far it overflowed), as mcmc chooses its start
// (placers/search_cost.h). Throws Error naming --warm-start for an unknown
// name or a placement that cannot run.
Placement WarmStartTarget(const PlacementProblem& problem, const LearnedOptions& options, Environment& environment);

// Supervised steps of `policy` toward `target`, until it gives each group
// its target device with probability about 0.99 or options.warm_start_steps
// run out. Polls for a stop (Stopped).
void ImitatePlacement(Policy& policy, torch::optim::Adam& optimizer, const Placement& target, const LearnedOptions& options);

}  // namespace devplace
