// Distilling search into a policy (`train --imitate-search N`): each
// (graph, cluster) pair the training meets gets a target, the best
// placement mcmc finds in N evaluations from the one-shot baselines' best,
// and each optimiser step's loss adds the imitation of the targets of the
// pairs the update sampled. Reinforcement alone, over the few hundred
// updates this project's machines give a training, settles on one safe
// placement (BENCHMARKS.md, "One policy for any cluster"); the targets
// tell the network what a minute of search would have found, for every
// pair at once.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "learned/policies/policy.h"
#include "placers/placer.h"

namespace devplace {

// The decision `policy` makes for the placement mcmc ends on after
// `evaluations` evaluations of `problem` (seeded with problem.seed, so the
// same pair gives the same target in every run and on resume). Polls for a
// stop (Stopped).
Decision SearchTarget(const PlacementProblem& problem, const Policy& policy, int64_t evaluations);

// How much each choice of a target counts in the imitation loss: with
// `by_flops`, its ops' share of the graph's FLOPs (a hundredth of the mean
// added to each, so that no choice counts for nothing), scaled so that the
// weights sum to the number of choices; empty (every choice alike) without
// it, or for a policy that does not say which choice places which op.
// Most of a large graph's units are light: where they go hardly changes
// the step time, so a search leaves them where its random moves did, and
// weighting by FLOPs keeps that noise from drowning the heavy units that
// set the step time.
std::vector<double> ChoiceWeights(const Graph& graph, const Policy& policy, bool by_flops);

// One pair's imitation loss: -log p(target), each choice's term times its
// weight (`weights` empty: 1; not empty needs a pass that scores choices one
// by one, GDP's, else Error), summed over the decision's choices as the
// reinforcement loss's log-probabilities are (so that a weight of 1 weighs
// them alike), differentiable, from a pass begun after the last optimiser
// step.
torch::Tensor ImitationLoss(PolicyPass& pass, const Decision& target, const std::vector<double>& weights);

}  // namespace devplace
