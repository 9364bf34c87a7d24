#include "learned/networks/segment_attention.h"

#include <algorithm>
#include <cstdint>

#include "util/stop_request.h"

namespace devplace {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One chunk of segments through every layer, checkpointed: the forward
// pass keeps the chunk's input, the graph context and the layers' memories,
// and the backward pass recomputes the layers from them with autograd on
// and backpropagates through that, so one chunk's activations are alive at
// a time. The parameters' gradients are accumulated into their .grad by
// that inner backward (PyTorch's reentrant checkpoint), so the loss must be
// backpropagated with backward(), as every trainer here does, not
// torch::autograd::grad over the parameters.
//
// Returns the chunk's output, then the last segment's input to each layer
// after the first (the next chunk's memories; not differentiable:
// Transformer-XL stops gradients at the memory).
class CheckpointedChunk : public torch::autograd::Function<CheckpointedChunk> {
 public:
  static variable_list forward(AutogradContext* ctx, SegmentAttentionImpl* placer, const torch::Tensor& x,
                               const torch::Tensor& context, torch::TensorList memories) {
    // The module outlives the graph that refers to it: a pass's loss is
    // backpropagated while its policy is alive.
    ctx->saved_data["placer"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(placer));
    // Without superposition the context is an empty stand-in: autograd
    // takes no undefined tensors here.
    const bool has_context = context.numel() > 0;
    ctx->saved_data["has_context"] = has_context;
    variable_list saved = {x, context};
    saved.insert(saved.end(), memories.begin(), memories.end());
    ctx->save_for_backward(saved);
    std::vector<torch::Tensor> next_memories;
    variable_list outputs = {placer->Layers(x, std::vector<torch::Tensor>(memories.begin(), memories.end()),
                                            has_context ? context : torch::Tensor(), &next_memories)};
    outputs.insert(outputs.end(), next_memories.begin() + 1, next_memories.end());
    ctx->mark_non_differentiable(variable_list(outputs.begin() + 1, outputs.end()));
    return outputs;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto* placer = reinterpret_cast<SegmentAttentionImpl*>(static_cast<intptr_t>(ctx->saved_data["placer"].toInt()));
    const bool has_context = ctx->saved_data["has_context"].toBool();
    variable_list saved = ctx->get_saved_variables();
    // One gradient per forward argument: the placer, x, context, each memory.
    variable_list grads(3 + saved.size() - 2);
    if (!grad_outputs[0].defined()) return grads;
    torch::AutoGradMode enable_grad(true);
    torch::Tensor x = saved[0].detach().requires_grad_(true);
    torch::Tensor context = has_context ? saved[1].detach().requires_grad_(true) : torch::Tensor();
    std::vector<torch::Tensor> memories(saved.begin() + 2, saved.end());
    torch::Tensor out = placer->Layers(x, memories, context, nullptr);
    torch::autograd::backward({out}, {grad_outputs[0]});
    grads[1] = x.grad();
    if (has_context) grads[2] = context.grad();
    return grads;
  }
};

}  // namespace

SegmentAttentionImpl::SegmentAttentionImpl(const SegmentAttentionOptions& options) : options_(options) {
  const int64_t H = options.sizes.hidden;
  if (options.sizes.superposition) {
    context_attention_ = register_module("context_attention", torch::nn::MultiheadAttention(H, options.sizes.heads));
    context_query_ = register_module("context_query", torch::nn::Linear(H, H));
  }
  for (int64_t l = 0; l < options.sizes.placer_layers; ++l) {
    if (options.sizes.attention) {
      attention_->push_back(torch::nn::MultiheadAttention(H, options.sizes.heads));
      norm_attention_->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({H})));
    }
    feed_in_->push_back(torch::nn::Linear(H, 2 * H));
    feed_out_->push_back(torch::nn::Linear(2 * H, H));
    norm_feed_->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({H})));
    // Two gated dense layers per layer: the feed-forward's two halves.
    if (options.sizes.superposition) {
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
  if (options.sizes.superposition) output_gate_ = register_module("output_gate", torch::nn::Linear(H, H));
}

torch::Tensor SegmentAttentionImpl::Attend(int64_t l, const torch::Tensor& x, const torch::Tensor& memory) {
  // Every segment of the chunk at once, as a batch: segment i's keys are
  // segment i-1's rows (the chunk's first segment: `memory`) and its own.
  // Missing rows (no memory yet, the graph's short last segment) are
  // padded and masked out, which weighs them exactly zero.
  const int64_t n = x.size(0), H = x.size(1), S = std::max<int64_t>(1, options_.sizes.segment);
  const int64_t segments = (n + S - 1) / S, padded = segments * S, m = memory.size(0);
  auto& attention = *attention_[l]->as<torch::nn::MultiheadAttentionImpl>();
  if (segments == 1) {  // the direct formula: [len, 1, H], nothing padded
    torch::Tensor keys = (m > 0 ? torch::cat({memory, x}, 0) : x).unsqueeze(1);
    return std::get<0>(attention.forward(x.unsqueeze(1), keys, keys, {}, false)).squeeze(1);
  }
  torch::Tensor queries = n == padded ? x : torch::cat({x, x.new_zeros({padded - n, H})}, 0);
  queries = queries.view({segments, S, H});
  torch::Tensor first_memory = m == S ? memory : torch::cat({memory, x.new_zeros({S - m, H})}, 0);
  torch::Tensor memories = torch::cat({first_memory.unsqueeze(0), queries.narrow(0, 0, segments - 1).detach()}, 0);
  torch::Tensor keys = torch::cat({memories, queries}, 1).transpose(0, 1);  // [2S, segments, H]
  torch::Tensor ignored;
  if (m < S || n < padded) {
    ignored = torch::zeros({segments, 2 * S}, torch::TensorOptions().dtype(torch::kBool));
    if (m < S) ignored[0].narrow(0, m, S - m).fill_(true);
    if (n < padded) ignored[segments - 1].narrow(0, S + (S - (padded - n)), padded - n).fill_(true);
  }
  torch::Tensor attended = std::get<0>(attention.forward(queries.transpose(0, 1), keys, keys, ignored, false));  // [S, segments, H]
  return attended.transpose(0, 1).reshape({padded, H}).narrow(0, 0, n);
}

torch::Tensor SegmentAttentionImpl::Layer(int64_t l, const torch::Tensor& x, const torch::Tensor& memory,
                                       const torch::Tensor& context) {
  torch::Tensor h = x;
  if (options_.sizes.attention) h = norm_attention_[l]->as<torch::nn::LayerNormImpl>()->forward(h + Attend(l, x, memory));
  torch::Tensor in = h;
  if (options_.sizes.superposition) in = in * torch::sigmoid(gate_[2 * l]->as<torch::nn::LinearImpl>()->forward(context));
  torch::Tensor mid = torch::relu(feed_in_[l]->as<torch::nn::LinearImpl>()->forward(in));
  if (options_.sizes.superposition) mid = mid * torch::sigmoid(gate_[2 * l + 1]->as<torch::nn::LinearImpl>()->forward(context));
  return norm_feed_[l]->as<torch::nn::LayerNormImpl>()->forward(h + feed_out_[l]->as<torch::nn::LinearImpl>()->forward(mid));
}

torch::Tensor SegmentAttentionImpl::LastSegment(const torch::Tensor& x) const {
  const int64_t S = std::max<int64_t>(1, options_.sizes.segment);
  const int64_t last_start = (x.size(0) - 1) / S * S;
  return x.narrow(0, last_start, x.size(0) - last_start).detach();
}

torch::Tensor SegmentAttentionImpl::Layers(const torch::Tensor& x_in, const std::vector<torch::Tensor>& memories,
                                        const torch::Tensor& context, std::vector<torch::Tensor>* next_memories) {
  torch::Tensor x = x_in;
  for (int64_t l = 0; l < options_.sizes.placer_layers; ++l) {
    if (next_memories != nullptr) next_memories->push_back(LastSegment(x));
    x = Layer(l, x, memories[l], context);
  }
  return x;
}

torch::Tensor SegmentAttentionImpl::forward(const torch::Tensor& embeddings) {
  const int64_t nodes = embeddings.size(0), S = std::max<int64_t>(1, options_.sizes.segment);
  // Segments are batched a chunk at a time: one call per layer for
  // thousands of nodes, instead of a dozen small ones per segment, which
  // spent an update's time dispatching ops.
  const int64_t chunk = std::max<int64_t>(1, options_.chunk_nodes / S) * S;
  torch::Tensor context;
  if (options_.sizes.superposition) {
    // One learned query over every node: what kind of graph this is.
    torch::Tensor query = context_query_(embeddings.mean(0, true)).unsqueeze(1);  // [1, 1, H]
    context = std::get<0>(context_attention_->forward(query, embeddings.unsqueeze(1), embeddings.unsqueeze(1), {}, false))
                  .view({1, -1});  // [1, H]
  }
  // Per layer: the previous segment's input to it; empty before the first.
  std::vector<torch::Tensor> memory(options_.sizes.placer_layers, torch::empty({0, embeddings.size(1)}, embeddings.options()));
  const bool checkpoint = torch::GradMode::is_enabled() && embeddings.requires_grad() && options_.sizes.placer_layers > 0 &&
                          nodes > options_.checkpoint_above_nodes;
  std::vector<torch::Tensor> outputs;
  for (int64_t start = 0; start < nodes; start += chunk) {
    ThrowIfStopRequested();  // a stop drops the pass
    torch::Tensor x = embeddings.narrow(0, start, std::min(chunk, nodes - start));
    if (checkpoint) {
      variable_list out =
          CheckpointedChunk::apply(this, x, context.defined() ? context : torch::empty({0}, embeddings.options()), memory);
      memory[0] = LastSegment(x);
      for (int64_t l = 1; l < options_.sizes.placer_layers; ++l) memory[l] = out[l];
      outputs.push_back(out[0]);
    } else {
      std::vector<torch::Tensor> next_memory;
      outputs.push_back(Layers(x, memory, context, &next_memory));
      memory = std::move(next_memory);
    }
  }
  torch::Tensor h = torch::cat(outputs, 0);
  if (options_.sizes.superposition) h = h * torch::sigmoid(output_gate_(context));
  return output_(h);
}

}  // namespace devplace
