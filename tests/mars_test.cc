// Mars's parts (Lan et al. 2021): the GCN encoder and its pre-training by
// Deep Graph Infomax.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "rl/deep_graph_infomax.h"

namespace devplace {
namespace {

double Sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }
double Softplus(double z) { return std::log1p(std::exp(z)); }

// On a three-node chain with every weight set by hand, DGI's loss equals
// the value worked out with plain arithmetic from the formulas in
// rl/deep_graph_infomax.h.
TEST(DeepGraphInfomaxTest, LossEqualsTheHandComputedValue) {
  GcnEncoder encoder(1, 1, 1);
  DgiDiscriminator discriminator(1);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : encoder->named_parameters()) p.value().fill_(p.key().find("prelu") != std::string::npos ? 0.25 : 1.0);
    for (auto& p : discriminator->named_parameters()) p.value().fill_(p.key().find("bias") != std::string::npos ? -0.5 : 2.0);
  }
  const torch::Tensor x = torch::tensor(std::vector<float>{1, -2, 3}).view({3, 1});
  const torch::Tensor src = torch::tensor(std::vector<int64_t>{0, 1}), dst = torch::tensor(std::vector<int64_t>{1, 2});
  const torch::Tensor shuffle = torch::tensor(std::vector<int64_t>{2, 0, 1});
  const DgiLoss got = ComputeDgiLoss(discriminator, encoder(x, src, dst), encoder(x.index_select(0, shuffle), src, dst));

  // A + I undirected: degrees 2, 3, 2.
  auto encode = [](double a, double b, double c) {
    const double r6 = std::sqrt(6.0);
    double h[3] = {a / 2 + b / r6, a / r6 + b / 3 + c / r6, b / r6 + c / 2};
    for (double& v : h) v = v > 0 ? v : 0.25 * v;  // PReLU
    return std::vector<double>{h[0], h[1], h[2]};
  };
  const std::vector<double> real = encode(1, -2, 3), corrupted = encode(3, 1, -2);
  const double s = Sigmoid((real[0] + real[1] + real[2]) / 3);
  double loss = 0;
  int right = 0;
  for (double h : real) {
    const double logit = 2.0 * h * s - 0.5;
    loss += Softplus(-logit);  // -log sigmoid(logit)
    right += logit > 0;
  }
  for (double h : corrupted) {
    const double logit = 2.0 * h * s - 0.5;
    loss += Softplus(logit);  // -log(1 - sigmoid(logit))
    right += logit <= 0;
  }
  EXPECT_NEAR(got.loss.item<double>(), loss / 6, 1e-6);
  EXPECT_DOUBLE_EQ(got.accuracy, right / 6.0);
}

// Graphs whose node features vary smoothly along their edges, as a real
// network's do (a layer's ops look alike, the next layer's differ a little).
struct SmoothGraph {
  torch::Tensor x, src, dst;
};
SmoothGraph MakeSmoothGraph(int64_t nodes, double period, int64_t skip) {
  std::vector<float> x;
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < nodes; ++v) {
    const double t = static_cast<double>(v) / period;
    x.insert(x.end(), {static_cast<float>(std::sin(t)), static_cast<float>(std::cos(t)), static_cast<float>(t / nodes * period)});
    if (v > 0) src.push_back(v - 1), dst.push_back(v);
    if (v >= skip) src.push_back(v - skip), dst.push_back(v);
  }
  return {torch::tensor(x).view({nodes, 3}), torch::tensor(src), torch::tensor(dst)};
}

DgiLoss Dgi(GcnEncoder& encoder, DgiDiscriminator& discriminator, const SmoothGraph& g, const torch::Tensor& shuffle) {
  return ComputeDgiLoss(discriminator, encoder(g.x, g.src, g.dst), encoder(g.x.index_select(0, shuffle), g.src, g.dst));
}

// A few hundred steps of DGI on three graphs and the discriminator tells
// real nodes from corrupted ones on every one of them; every parameter
// moved (the encoder is trained through the discriminator's loss).
TEST(DeepGraphInfomaxTest, TrainingSeparatesRealFromCorruptedNodes) {
  torch::manual_seed(5);
  GcnEncoder encoder(3, 16, 2);
  DgiDiscriminator discriminator(16);
  std::vector<torch::Tensor> parameters = encoder->parameters();
  for (const torch::Tensor& p : discriminator->parameters()) parameters.push_back(p);
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& p : parameters) before.push_back(p.detach().clone());
  torch::optim::Adam adam(parameters, torch::optim::AdamOptions(0.01));
  const std::vector<SmoothGraph> graphs = {MakeSmoothGraph(60, 6, 3), MakeSmoothGraph(90, 10, 5), MakeSmoothGraph(40, 4, 2)};
  torch::Generator generator = at::detail::createCPUGenerator(11);
  for (int step = 0; step < 300; ++step) {
    adam.zero_grad();
    torch::Tensor loss = torch::zeros({});
    for (const SmoothGraph& g : graphs) {
      const torch::Tensor shuffle = torch::randperm(g.x.size(0), generator, torch::kInt64);
      loss = loss + Dgi(encoder, discriminator, g, shuffle).loss;
    }
    loss.backward();
    adam.step();
  }
  torch::NoGradGuard no_grad;
  for (const SmoothGraph& g : graphs) {
    const torch::Tensor shuffle = torch::randperm(g.x.size(0), generator, torch::kInt64);
    EXPECT_GT(Dgi(encoder, discriminator, g, shuffle).accuracy, 0.9) << g.x.size(0);
  }
  for (size_t i = 0; i < parameters.size(); ++i) EXPECT_FALSE(torch::equal(parameters[i], before[i])) << i;
}

}  // namespace
}  // namespace devplace
