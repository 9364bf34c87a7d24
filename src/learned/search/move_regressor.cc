#include "learned/search/move_regressor.h"

#include <torch/torch.h>

#include <cstring>

namespace devplace {

namespace {

struct RegressorNetImpl : torch::nn::Module {
  RegressorNetImpl(int32_t features, int32_t hidden) {
    first = register_module("first", torch::nn::Linear(features, hidden));
    last = register_module("last", torch::nn::Linear(hidden, 1));
    // Zero output weights: every move predicts the same until the first
    // labels, so the first proposals are uniform, as mcmc's.
    torch::NoGradGuard no_grad;
    last->weight.zero_();
    last->bias.zero_();
  }
  torch::Tensor forward(const torch::Tensor& rows) { return last(torch::tanh(first(rows))).squeeze(-1); }
  torch::nn::Linear first{nullptr}, last{nullptr};
};
TORCH_MODULE(RegressorNet);

torch::Tensor RowsTensor(std::span<const float> rows, int32_t features) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(rows.size() / features), features}, torch::kFloat32);
  std::memcpy(t.data_ptr<float>(), rows.data(), rows.size() * sizeof(float));
  return t;
}

RegressorNet SeededNet(int32_t features, int32_t hidden, uint64_t seed) {
  torch::manual_seed(seed);
  return RegressorNet(features, hidden);
}

}  // namespace

struct MoveRegressor::Impl {
  Impl(const MoveRegressorOptions& o, uint64_t seed)
      : options(o),
        net(SeededNet(o.features, o.hidden, seed)),
        optimizer(net->parameters(), torch::optim::AdamOptions(o.learning_rate)) {}
  MoveRegressorOptions options;
  RegressorNet net;
  torch::optim::Adam optimizer;
  // A ring of the most recent rows and their rewards.
  std::vector<float> rows;  // `features` floats a row
  std::vector<float> rewards;
  size_t next = 0;
};

MoveRegressor::MoveRegressor(const MoveRegressorOptions& options, uint64_t seed)
    : impl_(std::make_unique<Impl>(options, seed)) {}
MoveRegressor::~MoveRegressor() = default;

std::vector<float> MoveRegressor::Predict(std::span<const float> rows) const {
  std::vector<float> out(rows.size() / impl_->options.features);
  if (out.empty()) return out;
  torch::NoGradGuard no_grad;
  const torch::Tensor p = impl_->net->forward(RowsTensor(rows, impl_->options.features)).contiguous();
  std::memcpy(out.data(), p.data_ptr<float>(), out.size() * sizeof(float));
  return out;
}

void MoveRegressor::Add(std::span<const float> row, double reward) {
  Impl& m = *impl_;
  const size_t width = static_cast<size_t>(m.options.features);
  if (static_cast<int32_t>(m.rewards.size()) < m.options.max_rows) {
    m.rows.insert(m.rows.end(), row.begin(), row.begin() + width);
    m.rewards.push_back(static_cast<float>(reward));
    return;
  }
  std::copy(row.begin(), row.begin() + width, m.rows.begin() + m.next * width);
  m.rewards[m.next] = static_cast<float>(reward);
  m.next = (m.next + 1) % m.rewards.size();
}

double MoveRegressor::Train(int32_t steps, Random& random) {
  Impl& m = *impl_;
  if (m.rows.empty()) return 0;
  const size_t width = static_cast<size_t>(m.options.features);
  double last_loss = 0;
  std::vector<float> batch;
  std::vector<float> labels;
  for (int32_t s = 0; s < steps; ++s) {
    batch.clear();
    labels.clear();
    if (static_cast<int32_t>(m.rewards.size()) <= m.options.batch_rows) {
      batch = m.rows;
      labels = m.rewards;
    } else {
      for (int32_t i = 0; i < m.options.batch_rows; ++i) {
        const size_t k = random.Below(m.rewards.size());
        batch.insert(batch.end(), m.rows.begin() + k * width, m.rows.begin() + (k + 1) * width);
        labels.push_back(m.rewards[k]);
      }
    }
    const torch::Tensor target = torch::from_blob(labels.data(), {static_cast<int64_t>(labels.size())},
                                                  torch::kFloat32);
    const torch::Tensor loss = torch::nn::functional::huber_loss(
        m.net->forward(RowsTensor(batch, m.options.features)), target,
        torch::nn::functional::HuberLossFuncOptions().delta(m.options.huber_delta));
    m.optimizer.zero_grad();
    loss.backward();
    m.optimizer.step();
    last_loss = loss.item<double>();
  }
  return last_loss;
}

int64_t MoveRegressor::rows() const { return static_cast<int64_t>(impl_->rewards.size()); }

}  // namespace devplace
