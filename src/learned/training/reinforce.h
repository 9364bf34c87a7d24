// REINFORCE (2017 §3.1, HDP): descend (R - b) * log p(decision) over the
// step's samples, b the controller's moving average of rewards (or the
// batch's mean reward), with an optional entropy bonus. One update per step.
#pragma once

#include <memory>

#include "learned/training/algorithm.h"
#include "learned/learned_placer.h"

namespace devplace {

std::unique_ptr<Algorithm> MakeReinforceAlgorithm(const LearnedOptions& options);

}  // namespace devplace
