#include "learned/networks/deep_graph_infomax.h"

namespace devplace {
namespace {

// A_hat h for A_hat = D^-1/2 (A + I) D^-1/2 of the undirected graph of the
// edges src -> dst. An edge listed twice counts twice, as it would in A.
torch::Tensor NormalisedAdjacencyTimes(const torch::Tensor& h, const torch::Tensor& src, const torch::Tensor& dst) {
  const int64_t n = h.size(0);
  const torch::Tensor nodes = torch::arange(n, src.options());
  const torch::Tensor from = torch::cat({src, dst, nodes});
  const torch::Tensor to = torch::cat({dst, src, nodes});
  const torch::Tensor degree = torch::zeros({n}, h.options()).index_add_(0, to, torch::ones({to.size(0)}, h.options()));
  const torch::Tensor scale = degree.rsqrt();
  const torch::Tensor weight = (scale.index_select(0, from) * scale.index_select(0, to)).unsqueeze(1);
  return torch::zeros_like(h).index_add(0, to, h.index_select(0, from) * weight);
}

}  // namespace

GcnEncoderImpl::GcnEncoderImpl(int64_t input_width, int64_t hidden, int64_t layers) : hidden_(hidden) {
  for (int64_t l = 0; l < std::max<int64_t>(1, layers); ++l) {
    linear_->push_back(torch::nn::Linear(torch::nn::LinearOptions(l == 0 ? input_width : hidden, hidden).bias(false)));
    prelu_->push_back(torch::nn::PReLU());
  }
  register_module("linear", linear_);
  register_module("prelu", prelu_);
}

torch::Tensor GcnEncoderImpl::forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst) {
  torch::Tensor h = x;
  for (size_t l = 0; l < linear_->size(); ++l) {
    h = prelu_[l]->as<torch::nn::PReLUImpl>()->forward(
        NormalisedAdjacencyTimes(linear_[l]->as<torch::nn::LinearImpl>()->forward(h), src, dst));
  }
  return h;
}

DgiDiscriminatorImpl::DgiDiscriminatorImpl(int64_t hidden) {
  bilinear_ = register_module("bilinear", torch::nn::Bilinear(hidden, hidden, 1));
}

torch::Tensor DgiDiscriminatorImpl::forward(const torch::Tensor& h, const torch::Tensor& summary) {
  return bilinear_(h, summary.unsqueeze(0).expand_as(h)).squeeze(1);
}

torch::Tensor DgiReadout(const torch::Tensor& h) { return torch::sigmoid(h.mean(0)); }

DgiLoss ComputeDgiLoss(DgiDiscriminator& discriminator, const torch::Tensor& real, const torch::Tensor& corrupted) {
  const torch::Tensor summary = DgiReadout(real);
  const torch::Tensor real_logits = discriminator(real, summary);
  const torch::Tensor corrupted_logits = discriminator(corrupted, summary);
  const torch::Tensor logits = torch::cat({real_logits, corrupted_logits});
  const torch::Tensor labels = torch::cat({torch::ones_like(real_logits), torch::zeros_like(corrupted_logits)});
  DgiLoss out;
  out.loss = torch::binary_cross_entropy_with_logits(logits, labels);
  torch::NoGradGuard no_grad;
  out.accuracy = ((logits > 0) == (labels > 0.5)).to(torch::kFloat64).mean().item<double>();
  return out;
}

}  // namespace devplace
