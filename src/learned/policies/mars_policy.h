// Mars (Lan et al. 2021) as a Policy of the training loop: the network of
// learned/networks/mars_net.h over one graph's co-location units, a device per unit,
// starting from the start probes of learned/policies/unit_decisions.h as GDP does. The
// graph encoder is the pre-trained one of LearnedOptions::unit.encoder_file, or fresh
// (the paper's ablation); it is fine-tuned at
// LearnedOptions::unit.encoder_learning_rate, and 0 freezes it.
#pragma once

#include <memory>

#include "learned/networks/mars_net.h"
#include "learned/policies/policy.h"
#include "learned/learned_placer.h"

namespace devplace {

// Throws Error when the graph has nothing to place, a unit can run on no
// device, or the encoder file is not one (learned/networks/mars_encoder.h).
// A fresh network (with the encoder of options.unit.encoder_file, or a fresh
// one), or the trained one of options.policy_file (`devplace train --method
// mars`).
std::unique_ptr<Policy> MakeMarsPolicy(const PlacementProblem& problem, const LearnedOptions& options);

// A policy over `problem` that trains `net`, shared with the policies of
// other graphs (batch training). Throws Error when the cluster does not
// match the network's device count.
std::unique_ptr<Policy> MakeMarsPolicyWithNet(const PlacementProblem& problem, MarsNet net, const LearnedOptions& options);

// The encoder a fresh Mars network starts from: options.unit.encoder_file's, or
// a fresh one over the vocabulary of `graphs`.
MarsEncoder MarsStartEncoder(const LearnedOptions& options, const std::vector<const Graph*>& graphs);

// The placer's architecture options ask for, for `devices` devices.
MarsPlacerArchitecture MarsPlacerArchitectureOf(const LearnedOptions& options, int64_t devices);

}  // namespace devplace
