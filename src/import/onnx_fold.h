// Evaluates the small integer computations exporters emit to compute shapes
// at run time (Shape -> Gather -> Div -> Concat -> Reshape), once the shapes
// they read are known, and replaces them by constants. libonnx's shape
// inference propagates such values through only a few op types; without
// this, a Transformer exported with dynamic sequence lengths keeps hundreds
// of tensors of unknown shape even after --dim gave every length.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "onnx/onnx_pb.h"

namespace devplace {

// Folds every node whose integer outputs can be computed from constants,
// integer initializers and the fully known shapes in `graph`'s inputs,
// value_info and outputs; each folded node becomes an initializer named as
// its output. Returns how many nodes were folded.
int FoldShapeComputations(onnx::GraphProto& graph);

// The values of an integer (int64 or int32) tensor held in the model, for
// a small one; nullopt otherwise.
std::optional<std::vector<int64_t>> OnnxIntValues(const onnx::TensorProto& tensor);

// A value's dims where inference knows every one of them, else nullopt.
std::optional<std::vector<int64_t>> KnownDims(const onnx::ValueInfoProto& v);

}  // namespace devplace
