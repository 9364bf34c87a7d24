// How the learning core scores a measured placement, torch-free: the
// reward its algorithms minimise and the failing signal a placement that
// does not run counts as. Kept out of the torch library so that what is not
// a trainer (the Python environment, python/) scores placements exactly as
// the trainers do.
#pragma once

#include "learned/learned_placer.h"
#include "placers/placer.h"
#include "sim/environment.h"

namespace devplace {

// A measured placement's reward, lower is better: sqrt(step time s) if it
// ran, else `failing_reward`; with `grade_failures`, a placement out of
// memory counts `failing_reward` x (1 + Outcome::memory_overflow), so that
// among failures those nearer to fitting rank better and a policy whose
// samples all overflow still learns which way memory fits.
double RewardOf(const Outcome& outcome, double failing_reward, bool grade_failures);

// The step time a failed placement counts as when not given: twice the
// all-on-CPU step time, or ten times the step-time lower bound if that does
// not run (or there is no CPU). +infinity when neither is finite.
double AutomaticFailingRuntimeS(const PlacementProblem& problem);

// sqrt of --failing-runtime, or of AutomaticFailingRuntimeS; throws Error
// when neither is finite.
double FailingRewardOf(const PlacementProblem& problem, const LearnedOptions& options);

}  // namespace devplace
