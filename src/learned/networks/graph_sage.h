// GDP's graph embedding (Zhou et al., §3.1): GraphSAGE (Hamilton et al.
// 2017) with max-pool aggregation, trained end to end by the placement
// loss. Each layer l gives every node
//   h_N(v) = max over neighbours u of sigmoid(W h_u + b)
//   h_v   <- relu(f([h_v ; h_N(v)]))
// Dataflow graphs are directed and a node's producers and consumers say
// different things (what it waits for, what waits for it), so predecessors
// and successors are pooled separately (each with its own W, b) and both
// are concatenated. Sparse throughout: pooling is an index_reduce over the
// edge list, never anything nodes x nodes, so a graph of a million ops
// costs its edges. A node with no neighbour on one side pools zeros there.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace devplace {

class GraphSageImpl : public torch::nn::Module {
 public:
  GraphSageImpl(int64_t input_width, int64_t hidden, int64_t layers);

  // x: [nodes, input_width] float; src, dst: [edges] int64, edge i runs
  // src[i] -> dst[i]. Returns [nodes, hidden].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst);

  int64_t hidden() const { return hidden_; }

 private:
  int64_t hidden_;
  torch::nn::Linear input_{nullptr};
  torch::nn::ModuleList pool_predecessors_, pool_successors_, combine_;
};
TORCH_MODULE(GraphSage);

}  // namespace devplace
