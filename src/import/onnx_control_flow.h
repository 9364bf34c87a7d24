// ONNX control flow (Loop, Scan, If) for the importer: the shapes a Loop's
// state keeps, and the compute cost of its bodies.
//
// The cost: control flow's work is in
// subgraphs EstimateOnnxNodeFlops does not see: a Loop's body times its
// trip count, a Scan's body times the length of its scan, the dearer of an
// If's two branches. torch.jit.script exports its Python loops this way; a
// scripted RNN's whole recurrence is one Loop.
//
// Body tensors have the shapes ONNX shape inference wrote into the body's
// inputs, value_info and outputs; names a body does not define come from
// the enclosing scope.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "import/onnx_flops.h"
#include "onnx/onnx_pb.h"

namespace devplace {

// A Loop runs at most this many times for its cost to be counted in full;
// a larger bound is taken as "until the condition says stop" (PyTorch
// exports a `while` loop with INT64_MAX as its trip count), unknown.
inline constexpr int64_t kMaxCostedTripCount = int64_t{1} << 31;

struct OnnxSubgraphCost {
  bool has_subgraph = false;  // a Loop, Scan or If with its bodies
  double flops = 0;           // one run of the node
  // Iterations that could not be counted (a Loop without a constant trip
  // count, a Scan of unknown length), counted once each: the names of
  // such nodes, nested ones included.
  std::vector<std::string> uncounted_loops;
  std::set<std::string> unknown_types;  // op types in the bodies costed by a guess
};

// Where an outer-scope tensor's shape is known (nullptr: not known).
using OnnxInfoLookup = std::function<const OnnxTensorInfo*(const std::string&)>;
// The value of a constant integer scalar (or one-element) tensor.
using OnnxScalarLookup = std::function<std::optional<int64_t>(const std::string&)>;

// `node_name` names the node in uncounted_loops; `inputs` follow its input
// slots (nullptr where absent or unknown).
OnnxSubgraphCost EstimateOnnxSubgraphFlops(const onnx::NodeProto& node, const std::string& node_name,
                                           const std::vector<const OnnxTensorInfo*>& inputs,
                                           const OnnxInfoLookup& outer, const OnnxScalarLookup& scalar);

// Gives a Loop's final state its shape where libonnx's inference leaves it
// unknown (it assumes a state may change shape between iterations): when
// the body gives back a state of the very shape it started with, every
// iteration keeps it. Only dims are written, into a value_info or output
// entry that inference made (as CompleteEinsumShapes does). Returns how
// many outputs it completed; run between inference rounds.
int CompleteLoopStateShapes(onnx::GraphProto& graph);

}  // namespace devplace
