// How a learned placer's policy is updated from measured placements:
// REINFORCE with a moving-average baseline (2017, HDP) or PPO's clipped
// surrogate (GDP, Mars). The loop gives an algorithm the samples that count
// this step and their rewards; the algorithm computes losses, backpropagates
// and asks the loop to apply the gradients (clip, optimiser step) as many
// times as it takes updates.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "learned/policies/policy.h"
#include "learned/training/reward.h"
#include "sim/environment.h"

namespace devplace {

struct LearnedOptions;

// The placements of one step that update the policy.
struct UpdateBatch {
  std::vector<Decision> decisions;
  std::vector<double> rewards;  // sqrt(step time s), or the failing signal: lower is better
};

// One graph's part of an update across graphs (`devplace train`): its
// policy (every graph's shares one network), the encoder pass its batch was
// sampled from, the placements that count and the graph's baseline.
class TrainingRanks;  // learned/training/training_ranks.h

// An update across graphs trained data-parallel: the other ranks train the
// other graphs, and every optimiser step sums their gradients.
struct UpdateAcrossRanks {
  TrainingRanks* ranks = nullptr;  // null: one process
  // This rank dropped its part of the update (a stop while it sampled):
  // every rank drops the update with it.
  bool stopped_here = false;
};

struct GraphBatch {
  Policy* policy = nullptr;
  std::unique_ptr<PolicyPass> pass;
  UpdateBatch batch;
  double* baseline = nullptr;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Updates `policy` from `batch`. `pass` is the encoder pass the batch was
  // sampled from, fresh (no optimiser step since). `baseline` is the
  // controller's moving average of rewards, updated here. `apply` clips the
  // gradients now in the policy's parameters and takes one optimiser step
  // (thread-safe; the loop owns the optimiser and its learning rate).
  virtual void Update(Policy& policy, PolicyPass& pass, const UpdateBatch& batch, double& baseline,
                      const std::function<void()>& apply) = 0;

  // How many times Update calls `apply` for a batch it learns from (fewer
  // only when stopped): controllers across processes each take that many
  // sums per update, whatever their own batch.
  virtual int32_t optimizer_steps_per_update() const { return 1; }

  // Updates the network every graph's policy shares from all their batches
  // at once (GDP's batch training, Zhou et al. §3.4): one loss, the mean of
  // each graph's clipped surrogate, where a placement's advantage is its
  // graph's baseline minus its reward over the spread of the graph's rewards,
  // (b_g - r) / std_g, so that a slow graph (or one whose placements differ
  // more) does not drown the others. `apply` as in Update; the first graph's
  // policy holds the parameters it steps. Across ranks (`across.ranks`),
  // the loss is the mean over every rank's graphs: each rank's gradients are
  // summed before `apply`, which every rank calls alike; a stop on any rank
  // drops the update on every rank (Stopped), or ends it after the epochs
  // made.
  virtual void UpdateAcrossGraphs(std::vector<GraphBatch>& graphs, const std::function<void()>& apply,
                                  const UpdateAcrossRanks& across = {}) = 0;
};

// The step times Policy::ChooseStart takes for measured start probes: the
// step time of one that ran, +infinity for one out of memory, NaN for one
// that failed by chance (the noise model's failures say nothing about it).
std::vector<double> ProbeStepTimes(const std::vector<Outcome>& outcomes);

// The advantages of a batch's rewards, A_k = b - r_k (lower reward is
// better, so a positive advantage is a good placement), where b is
// `baseline` as it stands (moving average) or the batch's mean reward
// (`batch_mean`). Then updates `baseline` over the rewards in order,
// b = decay b + (1 - decay) r, in both cases, as REINFORCE does, so the
// curve's baseline column means the same for every algorithm.
std::vector<double> BaselineAdvantages(const std::vector<double>& rewards, bool batch_mean, double baseline_decay,
                                  double& baseline);

// "reinforce" or "ppo"; throws Error for any other name.
std::unique_ptr<Algorithm> MakeAlgorithm(const LearnedOptions& options);

}  // namespace devplace
