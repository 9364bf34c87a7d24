// Einsum's output shape and work from its equation and its inputs' shapes.
// libonnx's shape inference gives an Einsum output only its rank, so every
// tensor after one had unknown dimensions (0 bytes, 0 FLOPs downstream).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace devplace {

struct EinsumResult {
  std::vector<int64_t> output_dims;
  double multiply_adds = 0;  // one per point of the iteration space
};

// nullopt where the equation is malformed or does not fit the shapes (the
// output is then left to the runtime, not guessed).
std::optional<EinsumResult> EvaluateEinsum(const std::string& equation, const std::vector<std::vector<int64_t>>& inputs);

// Writes the output shape of every Einsum node whose inputs' shapes are
// known and whose output's are not into the graph's value_info; returns
// how many it wrote (the importer then infers shapes again).
int CompleteEinsumShapes(onnx::GraphProto& graph);

}  // namespace devplace
