#include "learned/training/gradient_sum.h"

#include <algorithm>
#include <vector>

#include "learned/training/training_ranks.h"

namespace devplace {
namespace {

// The parameters an optimiser step moves (a frozen one, such as a policy's
// start placement, differs from graph to graph and is no rank's business).
std::vector<torch::Tensor> TrainedParameters(torch::nn::Module& module) {
  std::vector<torch::Tensor> trained;
  for (const torch::Tensor& p : module.parameters()) {
    if (p.requires_grad()) trained.push_back(p);
  }
  return trained;
}

}  // namespace

SharedGradients ShareGradients(torch::nn::Module& module, int32_t parts, bool dropped, TrainingRanks& ranks) {
  const std::vector<torch::Tensor> trained = TrainedParameters(module);
  int64_t count = 0;
  for (const torch::Tensor& p : trained) count += p.numel();
  // The gradients, then per parameter whether this rank has one, then the
  // parts and the stop.
  const bool gives = !dropped && parts > 0;
  std::vector<double> values(static_cast<size_t>(count), 0.0);
  values.reserve(values.size() + trained.size() + 2);
  int64_t offset = 0;
  for (const torch::Tensor& p : trained) {
    if (gives && p.grad().defined()) {
      const torch::Tensor g = p.grad().detach().to(torch::kFloat64).contiguous();
      std::copy(g.data_ptr<double>(), g.data_ptr<double>() + g.numel(), values.begin() + offset);
    }
    offset += p.numel();
  }
  for (const torch::Tensor& p : trained) values.push_back(gives && p.grad().defined() ? 1 : 0);
  values.push_back(dropped ? 0 : parts);
  values.push_back(dropped ? 1 : 0);
  ranks.Sum(values);
  SharedGradients shared;
  shared.parts = static_cast<int64_t>(values[values.size() - 2]);
  shared.dropped = values.back() > 0;
  if (shared.dropped || shared.parts == 0) return shared;
  torch::NoGradGuard no_grad;
  offset = 0;
  for (size_t i = 0; i < trained.size(); ++i) {
    torch::Tensor p = trained[i];
    if (values[static_cast<size_t>(count) + i] > 0) {
      torch::Tensor sum = torch::from_blob(values.data() + offset, p.sizes(), torch::kFloat64);
      p.mutable_grad() = (sum / static_cast<double>(shared.parts)).to(p.dtype());
    } else {
      p.mutable_grad() = torch::Tensor();
    }
    offset += p.numel();
  }
  return shared;
}

}  // namespace devplace
