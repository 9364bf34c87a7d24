// The small network guided scores candidate moves with (learned/search):
// one tanh hidden layer over a move's feature row, one number out. The
// REINFORCE proposer reads it as a logit, the regression screen as a
// predicted reward. Its output weights start at zero, so every move scores
// the same until it learns: the first proposals are uniform, as mcmc's.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <span>

namespace devplace {

struct MoveScorerNetImpl : torch::nn::Module {
  MoveScorerNetImpl(int32_t features, int32_t hidden) {
    first = register_module("first", torch::nn::Linear(features, hidden));
    last = register_module("last", torch::nn::Linear(hidden, 1));
    torch::NoGradGuard no_grad;
    last->weight.zero_();
    last->bias.zero_();
  }
  torch::Tensor forward(const torch::Tensor& rows) { return last(torch::tanh(first(rows))).squeeze(-1); }
  torch::nn::Linear first{nullptr}, last{nullptr};
};
TORCH_MODULE(MoveScorerNet);

// `rows` (`features` floats a row) as a [rows, features] tensor.
inline torch::Tensor MoveRowsTensor(std::span<const float> rows, int32_t features) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(rows.size() / features), features}, torch::kFloat32);
  std::memcpy(t.data_ptr<float>(), rows.data(), rows.size() * sizeof(float));
  return t;
}

}  // namespace devplace
