// Evaluates the small integer computations exporters emit to compute shapes
// at run time (Shape -> Gather -> Div -> Concat -> Reshape), once the shapes
// they read are known, and replaces them by constants. libonnx's shape
// inference propagates such values through only a few op types; without
// this, a Transformer exported with dynamic sequence lengths keeps hundreds
// of tensors of unknown shape even after --dim gave every length.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
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

// The shapes of a graph's values where every dim is known (inputs,
// value_info, outputs, initializers), for passes that work out what
// inference could not and write it back between inference rounds.
class GraphShapes {
 public:
  explicit GraphShapes(onnx::GraphProto& graph);
  // nullptr where not fully known.
  const std::vector<int64_t>* Find(const std::string& name) const;
  // Writes `dims` into the value_info or output entry inference made for
  // `name`: only dims, and only where its rank (if any) agrees. False
  // (nothing written) otherwise.
  bool Complete(const std::string& name, const std::vector<int64_t>& dims);

 private:
  std::unordered_map<std::string, std::vector<int64_t>> known_;
  std::unordered_map<std::string, onnx::ValueInfoProto*> entry_;
};

}  // namespace devplace
