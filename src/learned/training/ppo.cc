#include "learned/training/ppo.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "learned/learned_placer.h"
#include "learned/training/gradient_sum.h"
#include "learned/training/step_profile.h"
#include "learned/training/training_ranks.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {

torch::Tensor PpoClippedLoss(const torch::Tensor& new_log_prob, const torch::Tensor& old_log_prob,
                             const torch::Tensor& advantage, double clip) {
  // A decision's log-probability is a sum over every choice it makes
  // (thousands on a big graph), so a few optimiser steps can move it by far
  // more than exp() survives in float: the ratio would be inf, and inf * 0
  // or inf - inf a NaN. The log-ratio's value is clamped to +-20 first (a
  // ratio of 5e8, beyond any clip range). The clamp is straight-through (its
  // gradient is 1): where the clipped term is the minimum the gradient is 0
  // anyway, and where the unclipped one is (a ratio far above 1 + clip with
  // a negative advantage) its gradient keeps pulling the runaway decision
  // back, finite, instead of vanishing as a plain clamp's would.
  torch::Tensor log_ratio = new_log_prob - old_log_prob.detach();
  torch::Tensor bounded = log_ratio.clamp(-kPpoMaxLogRatio, kPpoMaxLogRatio);
  log_ratio = log_ratio + (bounded - log_ratio).detach();
  torch::Tensor ratio = torch::exp(log_ratio);
  torch::Tensor a = advantage.detach().to(ratio.dtype());
  torch::Tensor unclipped = ratio * a;
  torch::Tensor clipped = ratio.clamp(1.0 - clip, 1.0 + clip) * a;
  return -torch::min(unclipped, clipped).mean();
}

PpoAlgorithm::PpoAlgorithm(const PpoSettings& settings) : settings_(settings) {
  Require(settings_.epochs >= 1, "--ppo-epochs must be at least 1, got " + std::to_string(settings_.epochs));
  // Written so that NaN fails too. A clip of 1 or more leaves the ratio no
  // lower bound (it is positive), which is allowed.
  Require(settings_.clip > 0 && std::isfinite(settings_.clip),
          "--ppo-clip must be a finite number > 0, got " + std::to_string(settings_.clip));
  Require(settings_.baseline_decay >= 0 && settings_.baseline_decay <= 1,
          "--baseline-decay must be in [0, 1], got " + std::to_string(settings_.baseline_decay));
  Require(settings_.entropy_weight >= 0 && std::isfinite(settings_.entropy_weight),
          "--entropy-weight must be a finite number >= 0, got " + std::to_string(settings_.entropy_weight));
}

void PpoAlgorithm::Update(Policy& policy, PolicyPass& pass, const UpdateBatch& batch, double& baseline,
                          const std::function<void()>& apply) {
  if (batch.decisions.empty()) return;  // nothing ran after the cut-over: no update, baseline untouched
  Require(batch.decisions.size() == batch.rewards.size(), "PPO update: " + std::to_string(batch.decisions.size()) +
                                                              " decisions but " + std::to_string(batch.rewards.size()) +
                                                              " rewards");
  const std::vector<double> advantages =
      BaselineAdvantages(batch.rewards, settings_.batch_mean_baseline, settings_.baseline_decay, baseline);

  torch::Tensor old_log_prob;
  torch::Tensor advantage;
  std::unique_ptr<PolicyPass> fresh;  // the pass of epochs 1.., begun after each optimiser step
  for (int32_t epoch = 0; epoch < settings_.epochs; ++epoch) {
    // A stop after the first epoch's optimiser step ends the update with
    // the epochs it made (each is a whole step on the whole batch); one in
    // the first epoch throws Stopped and the update is dropped.
    if (epoch > 0 && StopRequested()) return;
    PolicyPass* current = &pass;
    torch::Tensor loss;
    try {
      if (epoch > 0) {
        ScopedStepPhase timed(StepPhase::kEncode);
        fresh = policy.Begin();
        current = fresh.get();
      }
      PolicySamples scored;
      {
        ScopedStepPhase timed(StepPhase::kScore);
        scored = current->Score(batch.decisions);
      }
      if (epoch == 0) {
        old_log_prob = scored.log_prob.detach();
        advantage = torch::tensor(std::vector<double>(advantages), scored.log_prob.options().requires_grad(false));
      }
      loss = PpoClippedLoss(scored.log_prob, old_log_prob, advantage, settings_.clip);
      if (settings_.entropy_weight > 0) loss = loss - settings_.entropy_weight * scored.entropy.mean();
      policy.module().zero_grad();
      {
        ScopedStepPhase timed(StepPhase::kBackward);
        loss.backward();
      }
    } catch (const Stopped&) {
      if (epoch == 0) throw;
      return;
    }
    apply();
  }
}

void PpoUpdateAcrossGraphs(std::vector<GraphBatch>& graphs, const PpoSettings& settings, const std::function<void()>& apply,
                           const UpdateAcrossRanks& across) {
  if (graphs.empty()) return;
  TrainingRanks* ranks = across.ranks;
  bool stopped_here = across.stopped_here;
  std::vector<torch::Tensor> old_log_probs(graphs.size()), advantages(graphs.size());
  try {
    for (size_t i = 0; i < graphs.size() && !stopped_here; ++i) {
      GraphBatch& g = graphs[i];
      if (g.batch.decisions.empty()) continue;
      // Normalised per graph: the advantage is in units of the graph's own
      // spread of rewards this update, so graphs of 0.1 s and of 10 s, and
      // graphs whose placements differ by 1 % or by 10x, weigh the same.
      const std::vector<double>& rewards = g.batch.rewards;
      std::vector<double> advantage =
          BaselineAdvantages(rewards, settings.batch_mean_baseline, settings.baseline_decay, *g.baseline);
      double mean = 0, square = 0;
      for (double r : rewards) mean += r / rewards.size();
      for (double r : rewards) square += (r - mean) * (r - mean) / rewards.size();
      const double spread = std::sqrt(square);
      if (!(spread > 1e-9 * std::abs(mean))) {
        g.batch.decisions.clear();
        continue;
      }
      for (double& a : advantage) a /= spread;
      advantages[i] = torch::tensor(advantage, torch::kFloat32);
      old_log_probs[i] = g.pass->Score(g.batch.decisions).log_prob.detach();
    }
  } catch (const Stopped&) {
    if (!ranks) throw;
    stopped_here = true;  // said to the other ranks at the first epoch's sum
  }

  Policy& first = *graphs.front().policy;
  for (int32_t epoch = 0; epoch < settings.epochs; ++epoch) {
    // A stop after the first epoch's optimiser step ends the update with
    // the epochs it made; one in the first drops the update (Stopped).
    // Across ranks the stop is said at the epoch's sum, so that every rank
    // ends (or drops) the update alike.
    if (!ranks && epoch > 0 && StopRequested()) break;
    if (ranks && epoch > 0 && StopRequested()) stopped_here = true;
    first.module().zero_grad();
    torch::Tensor loss = torch::zeros({});
    int32_t parts = 0;
    try {
      for (size_t i = 0; i < graphs.size() && !stopped_here; ++i) {
        GraphBatch& g = graphs[i];
        if (g.batch.decisions.empty()) continue;
        if (epoch > 0) g.pass = g.policy->Begin();
        PolicySamples scored = g.pass->Score(g.batch.decisions);
        loss = loss + PpoClippedLoss(scored.log_prob, old_log_probs[i], advantages[i], settings.clip);
        if (settings.entropy_weight > 0) loss = loss - settings.entropy_weight * scored.entropy.mean();
        ++parts;
      }
      if (!ranks) {
        if (parts == 0) break;
        (loss / parts).backward();
      } else if (parts > 0 && !stopped_here) {
        // The sum of this rank's losses: ShareGradients divides by every
        // rank's parts.
        loss.backward();
      }
    } catch (const Stopped&) {
      if (!ranks) {
        if (epoch == 0) throw;
        break;
      }
      stopped_here = true;
    }
    if (ranks) {
      const SharedGradients shared = ShareGradients(first.module(), parts, stopped_here, *ranks);
      if (shared.dropped) {
        if (epoch == 0) throw Stopped();
        break;
      }
      if (shared.parts == 0) break;
    }
    apply();
  }
}

std::unique_ptr<Algorithm> MakePpoAlgorithm(const LearnedOptions& options) {
  ValidateLearnedOptions(options);
  PpoSettings settings;
  settings.epochs = options.ppo_epochs;
  settings.clip = options.ppo_clip;
  settings.batch_mean_baseline = options.baseline == "batch-mean";
  settings.baseline_decay = options.baseline_decay;
  settings.entropy_weight = options.entropy_weight;
  return std::make_unique<PpoAlgorithm>(settings);
}

}  // namespace devplace
