// The optimiser of a learned placer: Adam over the policy's parameters in
// two groups (the network, and the scalars that set where the search starts)
// with the learning-rate schedule the papers use.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "learned/policies/policy.h"
#include "learned/learned_placer.h"

namespace devplace {

// Adam with the policy's network at options.learning_rate and, when the
// policy has priors (Policy::prior_parameters), a second group holding just
// them at options.prior_learning_rate, and when it has an encoder of its own
// rate (Policy::encoder_parameters), a third at
// options.unit.encoder_learning_rate. Parameters that require no gradient
// (a frozen encoder) are in none.
std::unique_ptr<torch::optim::Adam> MakePolicyOptimizer(Policy& policy, const LearnedOptions& options);

struct LearningRates {
  double network = 0;
  double priors = 0;
  double encoder = 0;  // Policy::encoder_parameters, when there are any
};

// The rates for update `step`: both decay by lr_decay every lr_decay_every
// updates after lr_decay_start.
LearningRates ScheduledLearningRates(const LearnedOptions& options, int64_t step);

// Sets the network group's rate, and the priors' group's when there is one.
void SetLearningRates(torch::optim::Adam& optimizer, const LearningRates& rates);

}  // namespace devplace
