#include "rl/reinforce.h"

#include <numeric>

namespace devplace {
namespace {

class Reinforce : public Algorithm {
 public:
  explicit Reinforce(const RlOptions& options)
      : baseline_decay_(options.baseline_decay),
        entropy_weight_(options.entropy_weight),
        batch_mean_(options.baseline == "batch-mean") {}

  void Update(Policy& policy, PolicyPass& pass, const UpdateBatch& batch, double& baseline,
              const std::function<void()>& apply) override {
    if (batch.decisions.empty()) return;
    PolicySamples scored = pass.Score(batch.decisions);
    const double compared_to =
        batch_mean_ ? std::accumulate(batch.rewards.begin(), batch.rewards.end(), 0.0) / batch.rewards.size() : baseline;
    std::vector<float> advantages;
    for (double r : batch.rewards) advantages.push_back(static_cast<float>(r - compared_to));
    // Minimising E[R]: descend (R - b) * log p.
    torch::Tensor loss = (torch::tensor(advantages) * scored.log_prob).mean();
    if (entropy_weight_ > 0) loss = loss - entropy_weight_ * scored.entropy.mean();
    policy.module().zero_grad();
    loss.backward();
    for (double r : batch.rewards) baseline = baseline_decay_ * baseline + (1 - baseline_decay_) * r;
    apply();
  }

 private:
  double baseline_decay_;
  double entropy_weight_;
  bool batch_mean_;
};

}  // namespace

std::unique_ptr<Algorithm> MakeReinforceAlgorithm(const RlOptions& options) { return std::make_unique<Reinforce>(options); }

}  // namespace devplace
