// The kernels the executor runs, by op type: real libtorch kernels with the
// graph's shapes (kernel_registry.cc lists them), and a stand-in for the
// types without one. The graph records shapes but not attributes (a
// MatMul's transposes, a Conv2D's stride and padding), so each kernel works
// them out from its inputs' and outputs' shapes; one that cannot returns
// false before doing any work, and the op runs the stand-in instead.
//
// Torch stays in exec/*.cc: only they include this header.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace devplace {

// What an op keeps from step to step on its device: a variable's value, an
// optimizer's slots, an input pipeline's batch.
struct OpState {
  std::vector<at::Tensor> tensors;
};

// How ONNX import's gradient ops lay out their inputs (src/import/
// onnx_training.cc, docs/import.md): an op "<forward>/grad" of type
// "<forward type>Grad" reads the forward op's float inputs (each tensor
// once, in the forward op's order), then the gradients arriving for its
// outputs, one per consumer; its outputs are the gradients of the forward
// inputs that need one, in order. TensorFlow's gradient ops of the same
// type names (ReluGrad(dy, y), SigmoidGrad(y, dy), MaxPoolGrad(x, y, dy))
// read their operands as TensorFlow defines them, so the executor tells the
// two apart from the graph (FindImportGradient), not from the shapes.
struct ImportGradient {
  int32_t forward_inputs = 0;        // the leading inputs that are the forward op's
  std::vector<int32_t> gradient_of;  // per output: the input (< forward_inputs) it is the gradient of
};

class KernelCall {
 public:
  KernelCall(const Op& op, std::vector<at::Tensor> inputs, at::Device device, OpState& state, uint64_t seed)
      : op(op), inputs(std::move(inputs)), outputs(op.outputs.size()), device(device), state(state), seed(seed) {}

  const Op& op;
  std::vector<at::Tensor> inputs;   // one per data in-edge, in the op's input order
  std::vector<at::Tensor> outputs;  // one per graph output; a kernel sets each, or writes into Out(i)
  at::Device device;
  OpState& state;
  uint64_t seed;  // of the values sources make
  // Set for ONNX import's gradient ops only; their kernels read it.
  const ImportGradient* import_gradient = nullptr;

  // Output i, allocated on first use with the graph's shape and dtype on
  // this call's device (by the calling thread, so on the device's memory).
  at::Tensor& Out(int32_t i);
};

// A kernel: false when the op's shapes are not ones it understands (then
// it has done nothing). A torch error it throws is treated the same way.
using KernelFn = bool (*)(KernelCall&);

// The kernel for `op_type`, or nullptr.
KernelFn FindKernel(std::string_view op_type);

// Op `op` of a finalized graph as ONNX import's gradient op of a forward op
// in the same graph, checked against the layout ImportGradient describes;
// nullopt for every other op.
std::optional<ImportGradient> FindImportGradient(const Graph& graph, int32_t op);

// The kernel of an ONNX import gradient op whose forward op has type
// `forward_type` ("Conv" for "ConvGrad"), or nullptr.
KernelFn FindImportGradientKernel(std::string_view forward_type);

// The kernel op `op` of a finalized graph runs, or nullptr: an ONNX import
// gradient op the one that reads the importer's layout (set in `*layout`,
// which its calls must point to), every other op its type's.
KernelFn KernelFor(const Graph& graph, int32_t op, std::optional<ImportGradient>* layout);

// Reads every input, writes every output, and does about the op's FLOPs as
// square matmuls of at most 128 x 128 (so its scratch stays small).
void RunStandIn(KernelCall& call);

// The torch dtype of a graph dtype name; kByte (one element per byte) for
// names torch has no type for.
at::ScalarType ScalarTypeOf(std::string_view dtype, bool* known = nullptr);

// A tensor of `spec`'s shape and dtype on `device` holding values drawn
// from (seed, name): floats uniform in +-1/sqrt(last dimension), so that
// chains of products stay finite; integers in [0, 32768). The same
// everywhere for the same seed and name.
at::Tensor SeededTensor(const TensorSpec& spec, uint64_t seed, std::string_view name, at::Device device);

// The elements of `spec` (1 for a scalar), and its shape as torch takes it.
int64_t ElementsOf(const TensorSpec& spec);
std::vector<int64_t> TorchShapeOf(const TensorSpec& spec);

}  // namespace devplace
