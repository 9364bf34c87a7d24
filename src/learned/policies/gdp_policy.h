// GDP (Zhou et al.) as a Policy of the training loop: the network of
// learned/networks/gdp_net.h over one graph's co-location units. A decision is a device
// per unit; units are placed independently given the network's output, so
// log p(decision) is a sum over units and K samples are one draw. Device
// kinds are masked: a unit is never offered a device that cannot run all
// its ops.
//
// Start (ours; the paper starts from random weights): the start probes of
// learned/policies/unit_decisions.h; the fastest becomes the graph's start placement and
// every unit's logit for its start device gets a learned bonus (GdpNet's
// start_bias).
#pragma once

#include <memory>

#include "learned/networks/gdp_net.h"
#include "learned/policies/policy.h"
#include "learned/learned_placer.h"

namespace devplace {

// For the training loop: a fresh network (options' architecture, the
// graph's own vocabulary), or the network of options.policy_file.
std::unique_ptr<Policy> MakeGdpPolicy(const PlacementProblem& problem, const LearnedOptions& options);

// A policy over `problem` that trains `net`, shared with the policies of
// other graphs (batch training), and, with a device-scoring head, other
// clusters. Throws Error when the cluster does not match a fixed head's
// device count or a unit can run on no device.
std::unique_ptr<Policy> MakeGdpPolicyWithNet(const PlacementProblem& problem, GdpNet net, const LearnedOptions& options);

// A fresh network for `devices` devices (any number with options'
// --gdp-head devices): GraphSAGE over the vocabulary of
// `graphs`, or, with options.unit.encoder_file, the pre-trained Mars encoder in
// its place (the encoder's vocabulary).
GdpNet MakeGdpNet(const LearnedOptions& options, int64_t devices, const std::vector<const Graph*>& graphs);

// The architecture that options ask for (the gdp_* fields), for `devices`
// devices and `vocabulary`.
GdpArchitecture GdpArchitectureOf(const LearnedOptions& options, int64_t devices, std::vector<std::string> vocabulary);

}  // namespace devplace
