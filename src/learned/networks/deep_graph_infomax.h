// Mars's graph encoder (Lan et al. 2021) and its pre-training without
// rewards: Deep Graph Infomax (Velickovic et al. 2019).
//
// The encoder is a GCN (Kipf and Welling): each layer
//   H <- PReLU(A_hat H W),  A_hat = D^-1/2 (A + I) D^-1/2
// over the graph made undirected, with self loops. Sparse throughout: the
// product with A_hat is an index_add over the edge list, never anything
// nodes x nodes.
//
// DGI trains it with no simulator in the loop: a readout summarises a graph,
// s = sigmoid(mean of its node embeddings); a bilinear discriminator scores
// (node, summary) pairs, D(h, s) = h^T W s + b; negatives are the nodes of a
// corrupted graph, the same edges with the node features shuffled across
// nodes; the loss is the binary cross-entropy of telling them apart,
//   L = -1/(2N) [sum_i log sigmoid(D(h_i, s)) + sum_j log(1 - sigmoid(D(h~_j, s)))].
// An encoder that wins must make each node's embedding say something about
// the graph around it: what the placer then reads.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace devplace {

class GcnEncoderImpl : public torch::nn::Module {
 public:
  GcnEncoderImpl(int64_t input_width, int64_t hidden, int64_t layers);

  // x: [nodes, input_width]; src, dst: [edges] int64 (direction ignored).
  // Returns [nodes, hidden].
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& src, const torch::Tensor& dst);

  int64_t hidden() const { return hidden_; }

 private:
  int64_t hidden_;
  torch::nn::ModuleList linear_;  // W of each layer (no bias, as Kipf and Welling)
  torch::nn::ModuleList prelu_;
};
TORCH_MODULE(GcnEncoder);

// The bilinear discriminator D(h, s) = h^T W s + b.
class DgiDiscriminatorImpl : public torch::nn::Module {
 public:
  explicit DgiDiscriminatorImpl(int64_t hidden);
  // h: [nodes, hidden], summary: [hidden]. Returns [nodes] logits.
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& summary);

 private:
  torch::nn::Bilinear bilinear_{nullptr};
};
TORCH_MODULE(DgiDiscriminator);

// The readout: sigmoid of the mean node embedding, [hidden].
torch::Tensor DgiReadout(const torch::Tensor& h);

struct DgiLoss {
  torch::Tensor loss;      // scalar, differentiable
  double accuracy = 0;     // share of real and corrupted nodes told apart (logit > 0 for real)
};

// DGI's loss on one graph from its units' embeddings, `real` (the encoder
// on the graph) and `corrupted` (the encoder on the same edges with the
// features shuffled across nodes), both [nodes, hidden].
DgiLoss ComputeDgiLoss(DgiDiscriminator& discriminator, const torch::Tensor& real, const torch::Tensor& corrupted);

}  // namespace devplace
