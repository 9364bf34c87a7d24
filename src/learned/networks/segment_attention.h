// GDP's placement network (Zhou et al., §3.2-3.3): Transformer-XL-style
// attention over the graph's nodes in topological order, cut into segments;
// each segment attends to itself and to a memory of the previous segment's
// states (gradients stopped there), so the context reaches back a segment
// per layer at the cost of two segments' attention. No positional
// embedding: the graph embedding already says where a node sits, and ids
// would let the policy memorise one graph. One pass gives every node's
// device logits (nodes are placed independently given the embeddings).
//
// Superposition (§3.3): a graph context c, one attention layer over all
// node embeddings pooled into a vector, gates the input of every dense
// layer, x_{l+1} = g(sigmoid(C_l c) * x_l), so one network can specialise
// per graph. `superposition = false` and `attention = false` (segment
// recurrence without attention: each node's feed-forward only) are the
// paper's ablations.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "learned/networks/gdp_network_sizes.h"

namespace devplace {

struct SegmentAttentionOptions {
  // GDP's sizes: hidden, heads, placer_layers, segment (nodes per segment),
  // attention and superposition (sage_layers is GraphSAGE's, not read here).
  GdpNetworkSizes sizes;
  int64_t devices = 2;
  // Above this many nodes a training pass keeps only each chunk's input
  // and memories and recomputes the chunk's layers in the backward pass
  // (checkpointing): the layers' activations, about 24 KB a node at width
  // 64, are what kept GDP from a million-op graph. Below it, torch's own
  // autograd, which skips the recomputation. Not part of the architecture:
  // either way gives the same logits and gradients up to rounding.
  int64_t checkpoint_above_nodes = 32768;
  // Nodes per chunk: the segments of a chunk go through each layer as one
  // batch (rounded down to whole segments, at least one). Not part of the
  // architecture either.
  int64_t chunk_nodes = 4096;
};

class SegmentAttentionImpl : public torch::nn::Module {
 public:
  explicit SegmentAttentionImpl(const SegmentAttentionOptions& options);

  // embeddings: [nodes, hidden], in topological order. Returns [nodes,
  // devices] logits (unmasked: the caller masks device kinds).
  torch::Tensor forward(const torch::Tensor& embeddings);

  const SegmentAttentionOptions& options() const { return options_; }
  // How a pass is cut and kept (SegmentAttentionOptions): the results are the
  // same up to rounding.
  void set_chunking(int64_t chunk_nodes, int64_t checkpoint_above_nodes) {
    options_.chunk_nodes = chunk_nodes;
    options_.checkpoint_above_nodes = checkpoint_above_nodes;
  }

  // Every layer over one chunk; memories[l] is layer l's memory, and
  // next_memories (if given) receives the chunk's last segment's input to
  // each layer, detached: the next chunk's memories.
  torch::Tensor Layers(const torch::Tensor& x, const std::vector<torch::Tensor>& memories, const torch::Tensor& context,
                       std::vector<torch::Tensor>* next_memories);

 private:
  // One layer over a chunk of whole segments (the graph's last may be
  // short). x: [len, hidden]; memory: [mem, hidden], the previous segment's
  // input to this layer (empty before the first).
  torch::Tensor Layer(int64_t l, const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& context);
  // The rows of a chunk's last segment, detached: a memory for the next
  // chunk.
  torch::Tensor LastSegment(const torch::Tensor& x) const;
  // Layer l's attention for a chunk: each segment over the previous one's
  // rows and its own.
  torch::Tensor Attend(int64_t l, const torch::Tensor& x, const torch::Tensor& memory);

  SegmentAttentionOptions options_;
  torch::nn::MultiheadAttention context_attention_{nullptr};
  torch::nn::Linear context_query_{nullptr};
  torch::nn::ModuleList attention_, norm_attention_, feed_in_, feed_out_, norm_feed_, gate_;
  torch::nn::Linear output_{nullptr};
  torch::nn::Linear output_gate_{nullptr};
};
TORCH_MODULE(SegmentAttention);

}  // namespace devplace
