#include "learned/networks/graph_sage.h"

namespace devplace {
namespace {

// Max over each node's neighbours (`from` -> `to` edges pooled into `to`) of
// sigmoid(pool(h_from)); zeros for a node with none.
torch::Tensor MaxPool(torch::nn::LinearImpl& pool, const torch::Tensor& h, const torch::Tensor& from, const torch::Tensor& to) {
  torch::Tensor messages = torch::sigmoid(pool.forward(h.index_select(0, from)));  // [edges, hidden]
  // include_self=false: a node's row is the max of its messages alone;
  // rows nobody sends to keep their zeros (sigmoid is positive, so zero
  // stays below any real message).
  return torch::zeros({h.size(0), messages.size(1)}, h.options())
      .scatter_reduce(0, to.unsqueeze(1).expand_as(messages), messages, "amax", /*include_self=*/false);
}

// torch warns once per process that scatter_reduce is a beta API: a
// two-line log that would open every GDP run's output. It is spent here,
// on a 1x1 tensor, with warnings going nowhere.
void SpendScatterReduceWarning() {
  struct Silent : c10::WarningHandler {
    void process(const c10::SourceLocation&, const std::string&, const bool) override {}
  };
  static const bool spent = [] {
    Silent silent;
    c10::Warning::WarningHandlerGuard guard(&silent);
    torch::zeros({1, 1}).scatter_reduce(0, torch::zeros({1, 1}, torch::kInt64), torch::ones({1, 1}), "amax", false);
    return true;
  }();
  (void)spent;
}

}  // namespace

GraphSageImpl::GraphSageImpl(int64_t input_width, int64_t hidden, int64_t layers) : hidden_(hidden) {
  SpendScatterReduceWarning();
  input_ = register_module("input", torch::nn::Linear(input_width, hidden));
  for (int64_t l = 0; l < layers; ++l) {
    pool_predecessors_->push_back(torch::nn::Linear(hidden, hidden));
    pool_successors_->push_back(torch::nn::Linear(hidden, hidden));
    combine_->push_back(torch::nn::Linear(3 * hidden, hidden));
  }
  register_module("pool_predecessors", pool_predecessors_);
  register_module("pool_successors", pool_successors_);
  register_module("combine", combine_);
}

torch::Tensor GraphSageImpl::forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst) {
  torch::Tensor h = torch::relu(input_(x));
  for (size_t l = 0; l < combine_->size(); ++l) {
    torch::Tensor from_predecessors = MaxPool(*pool_predecessors_[l]->as<torch::nn::LinearImpl>(), h, src, dst);
    torch::Tensor from_successors = MaxPool(*pool_successors_[l]->as<torch::nn::LinearImpl>(), h, dst, src);
    h = torch::relu(combine_[l]->as<torch::nn::LinearImpl>()->forward(torch::cat({h, from_predecessors, from_successors}, 1)));
  }
  return h;
}

}  // namespace devplace
