// Content-based (Bahdanau, additive) attention whose memory does not grow
// with steps x units x attention width.
//
// score(k, t, g) = v . tanh(keys[k, g] + queries[k, t])   (queries already projected)
// context[k, t]  = sum_g softmax_g(score(k, t, .)) * values[k, g]
//
// Written directly, the tanh is a [K, T, G, A] tensor, and autograd keeps it
// (and more of its size) until backward: for a placer that attends from every
// group to every group that is G^2 x A floats per sample, gigabytes on a few
// thousand groups. Here the steps are taken in chunks small enough that one
// chunk's [K, t, G, A] stays under a fixed byte budget; nothing of that size
// outlives its chunk. Backward recomputes each chunk with autograd and
// backpropagates it, so only the inputs are saved between forward and
// backward. Each chunk runs the same operations as the direct formula, so the
// results equal it up to float rounding in the order gradients are summed
// across chunks (bit for bit when one chunk holds every step).
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace devplace {

// One chunk's [K, t, G, A] floats stay within this many bytes (at least one
// step is always taken, whatever its size).
inline constexpr int64_t kAttentionChunkBytes = int64_t{64} << 20;

// The number of decoder steps per chunk for `samples` x `units` x `width`
// under kAttentionChunkBytes: at least 1.
int64_t AttentionChunkSteps(int64_t samples, int64_t units, int64_t width);

// keys [1 or K, G, A], values [1 or K, G, V], queries [K, T, A] (the
// decoder's outputs after their projection, bias included), score_weight
// [A]. Returns the context [K, T, V], differentiable in all four inputs.
// `chunk_steps` > 0 overrides the chunk length (tests); 0 picks it from the
// byte budget.
torch::Tensor AttentionContext(const torch::Tensor& keys, const torch::Tensor& values, const torch::Tensor& queries,
                               const torch::Tensor& score_weight, int64_t chunk_steps = 0);

}  // namespace devplace
