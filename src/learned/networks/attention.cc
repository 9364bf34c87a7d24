#include "learned/networks/attention.h"

#include <algorithm>

#include "util/stop_request.h"

namespace devplace {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The direct formula for one chunk of steps: the same operations, in the
// same order, as the policy computed before its attention was chunked, so
// that a chunk's results equal that code's.
torch::Tensor ChunkContext(const torch::Tensor& keys, const torch::Tensor& values, const torch::Tensor& queries,
                           const torch::Tensor& score_weight) {
  const int64_t K = queries.size(0);
  torch::Tensor hidden = torch::tanh(keys.unsqueeze(1) + queries.unsqueeze(2));                // [K, t, G, A]
  torch::Tensor scores = torch::linear(hidden, score_weight.view({1, -1})).squeeze(3);         // [K, t, G]
  torch::Tensor weights = torch::softmax(scores, 2);
  return torch::matmul(weights, values.expand({K, values.size(1), values.size(2)}));          // [K, t, V]
}

int64_t ChunkLength(const torch::Tensor& keys, const torch::Tensor& queries, int64_t chunk_steps) {
  if (chunk_steps > 0) return chunk_steps;
  return AttentionChunkSteps(queries.size(0), keys.size(1), keys.size(2));
}

// Saves only its inputs; backward recomputes each chunk and backpropagates
// through it, one chunk alive at a time.
class ChunkedAttention : public torch::autograd::Function<ChunkedAttention> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& keys, const torch::Tensor& values,
                               const torch::Tensor& queries, const torch::Tensor& score_weight, int64_t chunk_steps) {
    ctx->save_for_backward({keys, values, queries, score_weight});
    ctx->saved_data["chunk_steps"] = chunk_steps;
    const int64_t K = queries.size(0);
    const int64_t T = queries.size(1);
    const int64_t chunk = ChunkLength(keys, queries, chunk_steps);
    if (T <= chunk) return ChunkContext(keys, values, queries, score_weight);
    torch::Tensor context = torch::empty({K, T, values.size(2)}, values.options());
    for (int64_t first = 0; first < T; first += chunk) {
      // Each chunk is a slice of the update's cost (most of it on a graph of
      // thousands of groups): a stop drops the update here, or in backward.
      ThrowIfStopRequested();
      const int64_t steps = std::min(chunk, T - first);
      context.narrow(1, first, steps).copy_(ChunkContext(keys, values, queries.narrow(1, first, steps), score_weight));
    }
    return context;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& grad_context = grad_outputs[0];
    if (!grad_context.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    torch::AutoGradMode enable_grad(true);
    torch::Tensor keys = saved[0].detach().requires_grad_(true);
    torch::Tensor values = saved[1].detach().requires_grad_(true);
    torch::Tensor score_weight = saved[3].detach().requires_grad_(true);
    const torch::Tensor& queries = saved[2];
    const int64_t T = queries.size(1);
    const int64_t chunk = ChunkLength(keys, queries, ctx->saved_data["chunk_steps"].toInt());
    torch::Tensor grad_keys, grad_values, grad_weight;
    torch::Tensor grad_queries = torch::empty(queries.sizes(), queries.options());
    for (int64_t first = 0; first < T; first += chunk) {
      ThrowIfStopRequested();  // torch's autograd engine rethrows it from backward()
      const int64_t steps = std::min(chunk, T - first);
      // Each chunk's queries are a leaf of their own, so that their gradient
      // is only the chunk's, not a full [K, T, A] per chunk.
      torch::Tensor chunk_queries = queries.narrow(1, first, steps).detach().requires_grad_(true);
      torch::Tensor context = ChunkContext(keys, values, chunk_queries, score_weight);
      variable_list grads = torch::autograd::grad({context}, {keys, values, chunk_queries, score_weight},
                                                  {grad_context.narrow(1, first, steps)});
      grad_keys = grad_keys.defined() ? grad_keys + grads[0] : grads[0];
      grad_values = grad_values.defined() ? grad_values + grads[1] : grads[1];
      grad_weight = grad_weight.defined() ? grad_weight + grads[3] : grads[3];
      grad_queries.narrow(1, first, steps).copy_(grads[2]);
    }
    if (T == 0) {  // no steps: nothing attended, nothing to blame
      grad_keys = torch::zeros_like(keys);
      grad_values = torch::zeros_like(values);
      grad_weight = torch::zeros_like(score_weight);
    }
    return {grad_keys, grad_values, grad_queries, grad_weight, torch::Tensor()};
  }
};

}  // namespace

int64_t AttentionChunkSteps(int64_t samples, int64_t units, int64_t width) {
  const int64_t bytes_per_step = std::max<int64_t>(1, samples * units * width * static_cast<int64_t>(sizeof(float)));
  return std::max<int64_t>(1, kAttentionChunkBytes / bytes_per_step);
}

torch::Tensor AttentionContext(const torch::Tensor& keys, const torch::Tensor& values, const torch::Tensor& queries,
                               const torch::Tensor& score_weight, int64_t chunk_steps) {
  // Every step in one chunk (a small graph, or sampling's single step): the
  // direct formula with torch's own autograd holds no more than the budget,
  // and skips the recomputation, a third of an update's time on rnnlm.
  if (queries.size(1) <= ChunkLength(keys, queries, chunk_steps)) return ChunkContext(keys, values, queries, score_weight);
  return ChunkedAttention::apply(keys, values, queries, score_weight, chunk_steps);
}

}  // namespace devplace
