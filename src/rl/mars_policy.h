// Mars (Lan et al. 2021) as a Policy of the training loop: the network of
// rl/mars_net.h over one graph's co-location units, a device per unit,
// starting from the start probes of rl/unit_decisions.h as GDP does. The
// graph encoder is the pre-trained one of RlOptions::encoder_file, or fresh
// (the paper's ablation); it is fine-tuned at
// RlOptions::mars_encoder_learning_rate, and 0 freezes it.
#pragma once

#include <memory>

#include "rl/policy.h"
#include "rl/rl_placer.h"

namespace devplace {

// Throws Error when the graph has nothing to place, a unit can run on no
// device, or the encoder file is not one (rl/mars_encoder.h).
std::unique_ptr<Policy> MakeMarsPolicy(const PlacementProblem& problem, const RlOptions& options);

}  // namespace devplace
