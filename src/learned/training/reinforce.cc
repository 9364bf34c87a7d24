#include "learned/training/reinforce.h"

#include "learned/training/ppo.h"
#include "learned/training/step_profile.h"

namespace devplace {
namespace {

class Reinforce : public Algorithm {
 public:
  explicit Reinforce(const LearnedOptions& options)
      : baseline_decay_(options.baseline_decay),
        entropy_weight_(options.entropy_weight),
        batch_mean_(options.baseline == "batch-mean"),
        clip_(options.ppo_clip) {}

  void Update(Policy& policy, PolicyPass& pass, const UpdateBatch& batch, double& baseline,
              const std::function<void()>& apply) override {
    if (batch.decisions.empty()) return;
    PolicySamples scored;
    {
      ScopedStepPhase timed(StepPhase::kScore);
      scored = pass.Score(batch.decisions);
    }
    std::vector<float> advantages;
    for (double a : BaselineAdvantages(batch.rewards, batch_mean_, baseline_decay_, baseline)) {
      advantages.push_back(static_cast<float>(a));
    }
    // Minimising E[R]: ascend A * log p, A = b - R (exactly -(R - b)).
    torch::Tensor loss = -(torch::tensor(advantages) * scored.log_prob).mean();
    if (entropy_weight_ > 0) loss = loss - entropy_weight_ * scored.entropy.mean();
    policy.module().zero_grad();
    {
      ScopedStepPhase timed(StepPhase::kBackward);
      loss.backward();
    }
    apply();
  }

  // Across graphs: one pass of the same clipped loss as PPO's (at the
  // sampled parameters the ratio is 1, so its gradient is REINFORCE's).
  void UpdateAcrossGraphs(std::vector<GraphBatch>& graphs, const std::function<void()>& apply,
                          const UpdateAcrossRanks& across = {}) override {
    PpoSettings one_pass;
    one_pass.epochs = 1;
    one_pass.clip = clip_;
    one_pass.batch_mean_baseline = batch_mean_;
    one_pass.baseline_decay = baseline_decay_;
    one_pass.entropy_weight = entropy_weight_;
    PpoUpdateAcrossGraphs(graphs, one_pass, apply, across);
  }

 private:
  double baseline_decay_;
  double entropy_weight_;
  bool batch_mean_;
  double clip_;
};

}  // namespace

std::unique_ptr<Algorithm> MakeReinforceAlgorithm(const LearnedOptions& options) {
  ValidateLearnedOptions(options);
  return std::make_unique<Reinforce>(options);
}

}  // namespace devplace
