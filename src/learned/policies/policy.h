// What every learned placer's policy offers the training loop: sample
// placements with their log-probabilities, and score given ones. A method
// (the 2017 seq2seq placer, HDP's Grouper+Placer, GDP, Mars) is a Policy;
// the algorithms (REINFORCE, PPO) and the loop never look inside one.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "placers/placer.h"

namespace devplace {

// Everything one sample decided, in the policy's own terms (the 2017
// placer: a device per group; HDP: a group per unit, then a device per
// group). Plain numbers, so the loop can copy, store and compare them.
using Decision = std::vector<int32_t>;

struct PolicySamples {
  std::vector<Decision> decisions;
  torch::Tensor log_prob;  // [samples]: of the whole decision
  torch::Tensor entropy;   // [samples]: summed over the decision's choices
  // [samples, choices]: each choice's log-probability, from Score, for a
  // policy whose choices are independent given the pass (GDP); undefined
  // for the others.
  torch::Tensor choice_log_prob;
};

struct SampleOptions {
  double logit_noise_std = 0;  // Gaussian noise on logits while sampling (exploration)
  bool greedy = false;         // the most likely choice at every step instead of a draw
  int64_t step = 0;            // the update being sampled for: a policy's own schedules (HDP's grouper noise) use it
  // The caller scores (some of) these decisions on the same pass next, as a
  // training step does: a pass may keep, with gradients, what sampling
  // computed that scoring would compute again (the decoder's states), and
  // its Score uses it once. Sampling costs the same; the update saves a
  // forward pass.
  bool will_score = false;
};

// The rows of `sampled` that `decisions` are, in order: each decision is
// matched to the first row after the previous match that equals it. Empty
// when one is not found (then a pass scores them from scratch). What a pass
// that kept its sampling's states needs to score the samples the loop kept
// (after the cut-over, only those that ran).
std::vector<int64_t> RowsOfSampled(const std::vector<Decision>& decisions, const std::vector<Decision>& sampled);

// One forward pass of a policy's encoder over the graph, shared by the
// sampling and the scoring of one update (the encoder is the costly part on
// a big graph). A pass reflects the parameters when it began: after an
// optimiser step, begin a new one.
class PolicyPass {
 public:
  virtual ~PolicyPass() = default;
  // Draws `count` decisions; no gradient flows from them.
  virtual PolicySamples Sample(int64_t count, torch::Generator& generator, const SampleOptions& options) = 0;
  // The log-probabilities and entropies of given decisions, differentiable.
  virtual PolicySamples Score(const std::vector<Decision>& decisions) = 0;
};

class Policy {
 public:
  virtual ~Policy() = default;

  virtual std::unique_ptr<PolicyPass> Begin() = 0;

  // The op-by-op placement a decision stands for.
  virtual Placement ToPlacement(const Decision& decision) const = 0;

  // The decision whose placement is as close to `placement` as this policy
  // can express: what a warm start imitates.
  virtual Decision Imitate(const Placement& placement) const = 0;

  // The choice of a decision that sets each op's device ([op]: a unit), for
  // a policy that places units; empty for the others.
  virtual std::vector<int32_t> ChoiceOfOp() const { return {}; }

  // The parameters (for the optimiser, checkpoints, copies between
  // controllers).
  virtual torch::nn::Module& module() = 0;

  // The scalars of module() that set where the search starts (a stay bonus,
  // a locality weight): the optimiser moves them at
  // LearnedOptions::prior_learning_rate rather than the network's rate, so a
  // start that does not suit the graph is left within tens of updates.
  // None by default (every parameter learns at the network's rate).
  virtual std::vector<torch::Tensor> prior_parameters() { return {}; }

  // The parameters of a graph encoder that learns at its own rate
  // (LearnedOptions::unit.encoder_learning_rate: Mars's pre-trained encoder,
  // fine-tuned slower than the placer or frozen). None by default. A policy
  // with some also has prior parameters (the optimiser's groups are network,
  // priors, encoder, in that order).
  virtual std::vector<torch::Tensor> encoder_parameters() { return {}; }

  // Decisions the loop measures once before a fresh run's first update
  // (not on resume: the checkpoint holds the start already chosen), whose
  // step times pick where the search starts: ChooseStart gets them in order,
  // +infinity for one out of memory, NaN for one that failed by chance (the
  // noise model's failures say nothing about the placement). None by default.
  virtual std::vector<Decision> StartProbes() const { return {}; }
  virtual void ChooseStart(const std::vector<double>& step_times_s) { (void)step_times_s; }

  // A policy of the same shape with its own parameters (their values do not
  // matter: the loop copies them), for one more controller.
  virtual std::unique_ptr<Policy> MakeSibling() const = 0;

  // How many things it places (groups, or co-location units of ops): part
  // of a checkpoint's shape, so a run does not resume another's.
  virtual int64_t num_units() const = 0;
};

}  // namespace devplace
