// The compute cost of one ONNX node from its attributes and the shapes ONNX
// shape inference gave its tensors: FLOPs (2 per multiply-add) for the op
// types in common use, zero for ops that only rearrange data, and a
// size-based guess, flagged as such, for the rest.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx/onnx_pb.h"

namespace devplace {

// A tensor as the importer knows it. Dims are -1 where unknown.
struct OnnxTensorInfo {
  std::vector<int64_t> dims;
  bool has_shape = false;  // false: not even the rank is known
  std::string dtype = "float32";
  int64_t element_bytes = 4;

  bool fully_known() const;
  // Element count; 0 when the shape is not fully known.
  int64_t elements() const;
};

// A node's INT attribute (`fallback` when absent) and INTS attribute
// (empty when absent).
int64_t OnnxIntAttribute(const onnx::NodeProto& node, const std::string& name, int64_t fallback);
std::vector<int64_t> OnnxIntsAttribute(const onnx::NodeProto& node, const std::string& name);

// The importer's view of a typed value (dims -1 where unknown).
OnnxTensorInfo OnnxInfoOf(const onnx::ValueInfoProto& value);

// What `graph` says of its values (inputs, value_info, outputs where they
// say more, initializers), into `infos` by name.
void CollectOnnxTensorInfos(const onnx::GraphProto& graph, std::unordered_map<std::string, OnnxTensorInfo>& infos);

struct OnnxNodeCost {
  double flops = 0;
  bool known_type = true;  // false: the FLOPs are a guess from tensor sizes
};

// `inputs` and `outputs` follow the node's slots; nullptr for an absent
// optional input.
OnnxNodeCost EstimateOnnxNodeFlops(const onnx::NodeProto& node, const std::vector<const OnnxTensorInfo*>& inputs,
                                   const std::vector<const OnnxTensorInfo*>& outputs);

// Where a product's operands do not fit each other (MatMul's and Gemm's
// inner dimensions, Conv's channels against its weight's), or a Reshape's
// output has another element count than its input (a model exported with
// its batch fixed in a Reshape, imported with another --batch), what is
// wrong; "" otherwise or where a shape is unknown. libonnx's inference
// checks neither, and the model would be costed at two sizes, silently.
std::string OnnxOperandMismatch(const onnx::NodeProto& node, const std::vector<const OnnxTensorInfo*>& inputs,
                                const std::vector<const OnnxTensorInfo*>& outputs);

// Ops whose gradient is one product per input that needs it (so a
// backward pass costs up to twice the forward), unlike element-wise ops,
// whose gradient is about one more pass.
bool OnnxIsMatrixProduct(const std::string& op_type);

// Ops that only rearrange or relabel data: zero FLOPs.
bool OnnxIsDataMovement(const std::string& op_type);

// The devplace dtype name of an ONNX TensorProto element type ("" if none).
std::string OnnxDtypeName(int32_t elem_type);

}  // namespace devplace
