#include "rl/segment_placer.h"

#include <algorithm>

namespace devplace {

SegmentPlacerImpl::SegmentPlacerImpl(const SegmentPlacerOptions& options) : options_(options) {
  const int64_t H = options.hidden;
  if (options.superposition) {
    context_attention_ = register_module("context_attention", torch::nn::MultiheadAttention(H, options.heads));
    context_query_ = register_module("context_query", torch::nn::Linear(H, H));
  }
  for (int64_t l = 0; l < options.layers; ++l) {
    if (options.attention) {
      attention_->push_back(torch::nn::MultiheadAttention(H, options.heads));
      norm_attention_->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({H})));
    }
    feed_in_->push_back(torch::nn::Linear(H, 2 * H));
    feed_out_->push_back(torch::nn::Linear(2 * H, H));
    norm_feed_->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({H})));
    // Two gated dense layers per layer: the feed-forward's two halves.
    if (options.superposition) {
      gate_->push_back(torch::nn::Linear(H, H));
      gate_->push_back(torch::nn::Linear(H, 2 * H));
    }
  }
  register_module("attention", attention_);
  register_module("norm_attention", norm_attention_);
  register_module("feed_in", feed_in_);
  register_module("feed_out", feed_out_);
  register_module("norm_feed", norm_feed_);
  register_module("gate", gate_);
  output_ = register_module("output", torch::nn::Linear(H, options.devices));
  if (options.superposition) output_gate_ = register_module("output_gate", torch::nn::Linear(H, H));
}

torch::Tensor SegmentPlacerImpl::Layer(int64_t l, const torch::Tensor& x, const torch::Tensor& memory,
                                       const torch::Tensor& context) {
  torch::Tensor h = x;
  if (options_.attention) {
    // [len, 1, H]: MultiheadAttention reads sequence-first, one graph.
    torch::Tensor keys = memory.defined() && memory.size(0) > 0 ? torch::cat({memory, x}, 0) : x;
    torch::Tensor attended = std::get<0>(
        attention_[l]->as<torch::nn::MultiheadAttentionImpl>()->forward(x.unsqueeze(1), keys.unsqueeze(1), keys.unsqueeze(1), {}, false));
    h = norm_attention_[l]->as<torch::nn::LayerNormImpl>()->forward(h + attended.squeeze(1));
  }
  torch::Tensor in = h;
  if (options_.superposition) in = in * torch::sigmoid(gate_[2 * l]->as<torch::nn::LinearImpl>()->forward(context));
  torch::Tensor mid = torch::relu(feed_in_[l]->as<torch::nn::LinearImpl>()->forward(in));
  if (options_.superposition) mid = mid * torch::sigmoid(gate_[2 * l + 1]->as<torch::nn::LinearImpl>()->forward(context));
  return norm_feed_[l]->as<torch::nn::LayerNormImpl>()->forward(h + feed_out_[l]->as<torch::nn::LinearImpl>()->forward(mid));
}

torch::Tensor SegmentPlacerImpl::forward(const torch::Tensor& embeddings) {
  const int64_t nodes = embeddings.size(0), S = std::max<int64_t>(1, options_.segment);
  torch::Tensor context;
  if (options_.superposition) {
    // One learned query over every node: what kind of graph this is.
    torch::Tensor query = context_query_(embeddings.mean(0, true)).unsqueeze(1);  // [1, 1, H]
    context = std::get<0>(context_attention_->forward(query, embeddings.unsqueeze(1), embeddings.unsqueeze(1), {}, false))
                  .view({1, -1});  // [1, H]
  }
  std::vector<torch::Tensor> memory(options_.layers);  // per layer: the previous segment's input to it
  std::vector<torch::Tensor> outputs;
  for (int64_t start = 0; start < nodes; start += S) {
    torch::Tensor x = embeddings.narrow(0, start, std::min(S, nodes - start));
    for (int64_t l = 0; l < options_.layers; ++l) {
      torch::Tensor next_memory = x.detach();
      x = Layer(l, x, memory[l], context);
      memory[l] = next_memory;
    }
    outputs.push_back(x);
  }
  torch::Tensor h = torch::cat(outputs, 0);
  if (options_.superposition) h = h * torch::sigmoid(output_gate_(context));
  return output_(h);
}

}  // namespace devplace
