// PPO as GDP and Mars train their placers: the clipped surrogate of
// Schulman et al. (2017), several epochs over each measured batch, and no
// value network: the advantage of a placement is the baseline minus its
// reward (rewards are sqrt(step time), lower is better), the baseline being
// the controller's moving average or the batch's mean reward. docs/rl.md
// gives the formulas and where this differs from the papers.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "learned/training/algorithm.h"

namespace devplace {

struct LearnedOptions;

// Bounds on log(new p / old p) of a whole decision before it is
// exponentiated (see PpoClippedLoss).
inline constexpr double kPpoMaxLogRatio = 20.0;

// The clipped surrogate to minimise, averaged over the batch:
//   -mean_k min(ratio_k A_k, clamp(ratio_k, 1 - clip, 1 + clip) A_k),
//   ratio_k = exp(new_log_prob_k - old_log_prob_k).
// All three tensors are [samples]; `old_log_prob` and `advantage` are
// treated as constants (no gradient flows into them). A positive advantage
// means the decision did better than the baseline.
torch::Tensor PpoClippedLoss(const torch::Tensor& new_log_prob, const torch::Tensor& old_log_prob,
                             const torch::Tensor& advantage, double clip);

struct PpoSettings {
  int32_t epochs = 4;             // optimiser steps per batch, >= 1
  double clip = 0.2;              // epsilon of the clipped ratio, > 0
  bool batch_mean_baseline = false;
  double baseline_decay = 0.9;
  double entropy_weight = 0;
};

// The update across graphs of Algorithm::UpdateAcrossGraphs with
// `settings`: `settings.epochs` passes of one loss over every graph's batch
// (REINFORCE across graphs takes one pass of the same loss). A graph whose
// samples all scored alike has nothing to teach and takes no part.
void PpoUpdateAcrossGraphs(std::vector<GraphBatch>& graphs, const PpoSettings& settings, const std::function<void()>& apply,
                           const UpdateAcrossRanks& across = {});

class PpoAlgorithm : public Algorithm {
 public:
  // Throws Error naming the flag when a setting is out of range.
  explicit PpoAlgorithm(const PpoSettings& settings);

  // Epoch 0 scores the batch with `pass` (its detached log-probabilities are
  // the "old" ones the ratios compare against: the sampled ones may carry
  // logit noise); each later epoch begins a new pass, since the parameters
  // have moved. Calls `apply` once per epoch. Holds no state of its own, so
  // controllers may call it concurrently on their own policies.
  void Update(Policy& policy, PolicyPass& pass, const UpdateBatch& batch, double& baseline,
              const std::function<void()>& apply) override;
  int32_t optimizer_steps_per_update() const override { return settings_.epochs; }
  void UpdateAcrossGraphs(std::vector<GraphBatch>& graphs, const std::function<void()>& apply,
                          const UpdateAcrossRanks& across = {}) override {
    PpoUpdateAcrossGraphs(graphs, settings_, apply, across);
  }

  const PpoSettings& settings() const { return settings_; }

 private:
  PpoSettings settings_;
};

// From the command line's options (algorithm "ppo"): ppo_epochs, ppo_clip,
// baseline, baseline_decay, entropy_weight. Throws Error for an unknown
// baseline name or an out-of-range setting.
std::unique_ptr<Algorithm> MakePpoAlgorithm(const LearnedOptions& options);

}  // namespace devplace
