// Turns an imported forward graph into a training step: a loss over the
// graph's outputs, one backward op per forward op that a gradient flows
// through (co-located with it, reading the activations it saved), and one
// optimizer update per trainable weight, co-located with the weight.
// PyTorch autograd and TensorFlow's colocate_gradients_with_ops both give
// this shape; the op-by-op gradient rules of models/tf_ops.h need the model
// code, which an ONNX file does not have, so costs here follow the forward
// op's FLOPs instead.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace devplace {

// `graph`: forward ops in topological order (indices), not finalized.
// `trainable[i]`: op i is a trainable weight. `outputs`: the (op, output)
// tensors the loss reads. `optimizer_slots`: state tensors per parameter.
void SynthesizeTraining(Graph& graph, const std::vector<bool>& trainable,
                        const std::vector<std::pair<int32_t, int32_t>>& outputs, int32_t optimizer_slots);

}  // namespace devplace
