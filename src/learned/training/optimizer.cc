#include "learned/training/optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "util/error.h"

namespace devplace {

std::unique_ptr<torch::optim::Adam> MakePolicyOptimizer(Policy& policy, const LearnedOptions& options) {
  const std::vector<torch::Tensor> priors = policy.prior_parameters();
  const std::vector<torch::Tensor> encoder = policy.encoder_parameters();
  auto in = [](const std::vector<torch::Tensor>& list, const torch::Tensor& t) {
    return std::any_of(list.begin(), list.end(), [&](const torch::Tensor& p) { return p.unsafeGetTensorImpl() == t.unsafeGetTensorImpl(); });
  };
  // A frozen parameter (requires no gradient) is in no group.
  std::vector<torch::Tensor> network;
  for (const torch::Tensor& t : policy.module().parameters()) {
    if (t.requires_grad() && !in(priors, t) && !in(encoder, t)) network.push_back(t);
  }
  if (!encoder.empty() && priors.empty()) throw Error("a policy with an encoder of its own rate must have priors (learned/policies/policy.h)");
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(network, std::make_unique<torch::optim::AdamOptions>(options.learning_rate));
  if (!priors.empty()) groups.emplace_back(priors, std::make_unique<torch::optim::AdamOptions>(options.prior_learning_rate));
  if (!encoder.empty()) groups.emplace_back(encoder, std::make_unique<torch::optim::AdamOptions>(options.unit.encoder_learning_rate));
  return std::make_unique<torch::optim::Adam>(std::move(groups), torch::optim::AdamOptions(options.learning_rate));
}

LearningRates ScheduledLearningRates(const LearnedOptions& options, int64_t step) {
  double factor = 1;
  if (step > options.lr_decay_start && options.lr_decay_every > 0) {
    factor = std::pow(options.lr_decay, static_cast<double>((step - options.lr_decay_start) / options.lr_decay_every));
  }
  return {options.learning_rate * factor, options.prior_learning_rate * factor, options.unit.encoder_learning_rate * factor};
}

void SetLearningRates(torch::optim::Adam& optimizer, const LearningRates& rates) {
  auto& groups = optimizer.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    static_cast<torch::optim::AdamOptions&>(groups[i].options()).lr(i == 0 ? rates.network : i == 1 ? rates.priors : rates.encoder);
  }
}

}  // namespace devplace
