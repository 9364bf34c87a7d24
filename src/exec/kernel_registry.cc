// Op type -> kernel: TensorFlow's names (the built-in models), ONNX's
// (devplace import) and PyTorch's aten names (tools/export_pytorch.py)
// where the meaning is the same. A type not listed runs the stand-in.
#include <algorithm>
#include <array>

#include "exec/kernel_families.h"

namespace devplace {
namespace {

using namespace kernels;

struct Entry {
  std::string_view type;
  KernelFn kernel;
};

// Sorted by type at first use, for binary search. One family a few lines.
// clang-format off
constexpr Entry kKernels[] = {
    // Products.
    {"MatMul", MatMul}, {"BatchMatMul", MatMul}, {"BatchMatMulV2", MatMul}, {"BatchMatMulV3", MatMul},
    {"Gemm", MatMul}, {"aten.mm", MatMul}, {"aten.bmm", MatMul}, {"aten.matmul", MatMul},
    // Convolutions, pooling, normalization.
    {"Conv2D", Conv2D}, {"Conv2DBackpropInput", Conv2DBackpropInput},
    {"Conv2DBackpropFilter", Conv2DBackpropFilter}, {"DepthwiseConv2dNative", DepthwiseConv2D},
    {"DepthwiseConv2dNativeBackpropInput", DepthwiseConv2DBackpropInput},
    {"DepthwiseConv2dNativeBackpropFilter", DepthwiseConv2DBackpropFilter}, {"Conv", OnnxConv},
    {"MaxPool", MaxPool}, {"AvgPool", AvgPool}, {"MaxPoolGrad", MaxPoolGrad}, {"AvgPoolGrad", AvgPoolGrad},
    {"FusedBatchNorm", FusedBatchNorm}, {"FusedBatchNormV3", FusedBatchNorm},
    {"FusedBatchNormGrad", FusedBatchNormGrad}, {"FusedBatchNormGradV3", FusedBatchNormGrad},
    // Element-wise, one operand.
    {"Sigmoid", Sigmoid}, {"Tanh", Tanh}, {"Relu", Relu}, {"Exp", Exp}, {"Log", Log}, {"Neg", Neg},
    {"Sqrt", Sqrt}, {"Rsqrt", Rsqrt}, {"Floor", Floor}, {"Abs", Abs}, {"Sin", Sin}, {"Cos", Cos}, {"Erf", Erf},
    {"Square", Square}, {"Pow", PowConstant}, {"Cast", Cast},
    {"aten.relu", Relu}, {"aten.sigmoid", Sigmoid}, {"aten.tanh", Tanh},
    // Element-wise, two operands (broadcasting), and their gradients.
    {"Add", Add}, {"AddV2", Add}, {"BiasAdd", Add}, {"Sub", Sub}, {"Mul", Mul}, {"RealDiv", Div}, {"Div", Div},
    {"Maximum", Maximum}, {"Minimum", Minimum}, {"SquaredDifference", SquaredDifference}, {"FloorDiv", FloorDiv},
    {"GreaterEqual", GreaterEqual}, {"SigmoidGrad", SigmoidGrad}, {"TanhGrad", TanhGrad}, {"ReluGrad", ReluGrad},
    {"RsqrtGrad", RsqrtGrad}, {"SqrtGrad", SqrtGrad}, {"Select", Select}, {"AddN", AddN},
    {"aten.add", Add}, {"aten.mul", Mul}, {"aten.sub", Sub}, {"aten.div", Div},
    // Reductions, softmax, losses.
    {"Sum", Sum}, {"Mean", Mean}, {"Max", Max}, {"BiasAddGrad", Sum}, {"ReduceSum", Sum}, {"ReduceMean", Mean},
    {"L2Loss", L2Loss}, {"Softmax", Softmax}, {"LogSoftmax", LogSoftmax},
    {"SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropy},
    {"SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropy},
    {"SoftmaxCrossEntropy", ScalarLoss}, {"Loss", ScalarLoss},
    // Sources.
    {"VariableV2", Variable}, {"Variable", Variable}, {"VarHandleOp", Variable},
    {"IteratorGetNext", InputBatch}, {"Placeholder", InputBatch}, {"Input", InputBatch},
    {"Const", Constant}, {"RandomUniform", RandomUniform}, {"Fill", Fill}, {"ZerosLike", ZerosLike},
    // Shapes and their arithmetic.
    {"Shape", ShapeOfInput}, {"ShapeN", ShapeOfInput}, {"Size", SizeOfInput},
    {"BroadcastGradientArgs", ShapeMetadata}, {"ConcatOffset", ShapeMetadata}, {"DynamicStitch", ShapeMetadata},
    {"InvertPermutation", ShapeMetadata}, {"Prod", ShapeMetadata}, {"Range", Range},
    // Data movement.
    {"Reshape", Alias}, {"ExpandDims", Alias}, {"Squeeze", Alias}, {"Identity", Alias}, {"StopGradient", Alias},
    {"PreventGradient", Alias}, {"Snapshot", Alias}, {"Flatten", Alias}, {"Unsqueeze", Alias},
    {"aten.view", Alias}, {"aten.reshape", Alias},
    {"ConcatV2", Concat}, {"Concat", Concat}, {"aten.cat", Concat}, {"Pack", Pack}, {"Split", Split},
    {"SplitV", Split}, {"Unpack", Unpack}, {"Slice", Slice}, {"StridedSlice", Slice}, {"Pad", Pad},
    {"Tile", Tile}, {"Transpose", Transpose},
    // Embeddings and their sparse gradients.
    {"GatherV2", Gather}, {"Gather", Gather}, {"ResourceGather", Gather},
    {"UnsortedSegmentSum", UnsortedSegmentSum}, {"ScatterAdd", ScatterAdd}, {"OneHot", OneHot},
    // Optimizer updates.
    {"Assign", Assign}, {"AssignSub", AssignSub}, {"ApplyAdam", ApplyAdam}, {"ApplyRMSProp", ApplyRmsProp},
    {"ApplyMomentum", ApplyMomentum}, {"ApplyGradientDescent", ApplyGradientDescent},
};
// clang-format on

}  // namespace

KernelFn FindKernel(std::string_view op_type) {
  static const auto sorted = [] {
    std::array<Entry, std::size(kKernels)> table;
    std::copy(std::begin(kKernels), std::end(kKernels), table.begin());
    std::sort(table.begin(), table.end(), [](const Entry& a, const Entry& b) { return a.type < b.type; });
    return table;
  }();
  auto it = std::lower_bound(sorted.begin(), sorted.end(), op_type,
                             [](const Entry& e, std::string_view type) { return e.type < type; });
  return it != sorted.end() && it->type == op_type ? it->kernel : nullptr;
}

}  // namespace devplace
