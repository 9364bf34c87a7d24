// Op type -> kernel: TensorFlow's names (the built-in models), ONNX's
// (devplace import) and PyTorch's aten names (tools/export_pytorch.py)
// where the meaning is the same. A type not listed runs the stand-in.
#include <algorithm>
#include <array>

#include "exec/kernels/kernel_families.h"

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
    {"aten.mm", MatMul}, {"aten.bmm", MatMul}, {"aten.matmul", MatMul},
    // Convolutions, pooling, normalization.
    {"Conv2D", Conv2D}, {"Conv2DBackpropInput", Conv2DBackpropInput},
    {"Conv2DBackpropFilter", Conv2DBackpropFilter}, {"DepthwiseConv2dNative", DepthwiseConv2D},
    {"DepthwiseConv2dNativeBackpropInput", DepthwiseConv2DBackpropInput},
    {"DepthwiseConv2dNativeBackpropFilter", DepthwiseConv2DBackpropFilter}, {"Conv", OnnxConv},
    {"MaxPool", MaxPoolEitherLayout}, {"AvgPool", AvgPool}, {"MaxPoolGrad", MaxPoolGrad}, {"AvgPoolGrad", AvgPoolGrad},
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
    // ONNX's forward ops (devplace import), NCHW.
    {"AveragePool", OnnxAveragePool}, {"BatchNormalization", OnnxBatchNorm}, {"GlobalAveragePool", Mean},
    {"GlobalMaxPool", Max}, {"Clip", Clip}, {"Constant", Constant}, {"ConstantOfShape", Fill},
    {"Dropout", Alias}, {"Gemm", MatMulAddBias}, {"ReduceMax", Max},
    // PyTorch's aten ops (tools/export_pytorch.py).
    {"aten.convolution", OnnxConv}, {"aten.convolution_backward", AtenConvolutionBackward},
    {"aten.native_batch_norm", AtenBatchNorm}, {"aten.native_batch_norm_backward", AtenBatchNormBackward},
    {"aten.relu_", Relu}, {"aten.threshold_backward", ReluGrad}, {"aten.hardtanh", AtenHardtanh},
    {"aten.hardtanh_backward", AtenHardtanhBackward}, {"aten.max_pool2d_with_indices", AtenMaxPoolWithIndices},
    {"aten.max_pool2d_with_indices_backward", AtenMaxPoolBackward}, {"aten.avg_pool2d", AtenAvgPool},
    {"aten.avg_pool2d_backward", AtenAvgPoolBackward}, {"aten._adaptive_avg_pool2d", AtenAdaptiveAvgPool},
    {"aten._adaptive_avg_pool2d_backward", AtenAdaptiveAvgPoolBackward}, {"aten.mean", Mean}, {"aten.sum", Sum},
    {"aten._log_softmax", LogSoftmax}, {"aten._softmax", Softmax},
    {"aten._log_softmax_backward_data", AtenLogSoftmaxBackward}, {"aten.nll_loss_forward", AtenNllLoss},
    {"aten.nll_loss_backward", AtenNllLossBackward}, {"aten.addmm", MatMulAddBias},
    {"aten.add_", Add}, {"aten.sub_", Sub}, {"aten.mul_", Mul}, {"aten.div_", Div}, {"aten.sqrt", Sqrt},
    {"aten.addcmul_", AtenAddcmul}, {"aten.addcdiv_", AtenAddcdiv}, {"aten.bernoulli_", AtenBernoulli},
    {"aten.slice", Slice}, {"aten.t", AtenTransposeView}, {"aten.expand", AtenExpandView},
    {"aten._reshape_alias", Alias}, {"aten._unsafe_view", Alias}, {"aten.detach", Alias},
    {"aten.lift_fresh_copy", Alias}, {"aten.alias", Alias}, {"aten.clone", Alias}, {"aten.squeeze", Alias},
    {"aten.unsqueeze", Alias}, {"aten.empty", ZerosLike}, {"aten.empty_like", ZerosLike}, {"aten.zeros", ZerosLike},
    {"aten.zeros_like", ZerosLike}, {"aten.ones_like", Fill}, {"aten.full", Fill},
    {"aten.sigmoid_backward", AtenSigmoidBackward}, {"aten.tanh_backward", AtenTanhBackward}, {"aten.neg", Neg},
    {"aten.exp", Exp}, {"aten.log", Log}, {"aten.rsqrt", Rsqrt}, {"aten.abs", Abs}, {"aten.maximum", Maximum},
    {"aten.minimum", Minimum}, {"aten.where", Select}, {"aten.permute", Transpose}, {"aten.transpose", Transpose},
    // SiLU (EfficientNet), whose backward make_fx writes as sigmoid, fill_
    // (ones: the scalar is not in the graph, and no step time depends on
    // it), sub, mul and add; channel splits (ShuffleNet).
    {"aten.silu", Silu}, {"aten.fill_", Fill}, {"aten.split", Split}, {"aten.split_with_sizes", Split},
    {"aten.unbind", Unpack},
    // MobileNet-V3's and the vision transformers' activations, and
    // attention's softmax gradient.
    {"aten.gelu", Gelu}, {"aten.gelu_backward", AtenGeluBackward}, {"aten.hardswish", Hardswish},
    {"aten.hardswish_backward", AtenHardswishBackward}, {"aten.hardsigmoid", Hardsigmoid},
    {"aten.hardsigmoid_backward", AtenHardsigmoidBackward}, {"aten._softmax_backward_data", AtenSoftmaxBackward},
    {"aten.new_empty_strided", ZerosLike}, {"aten.new_empty", ZerosLike}, {"aten.new_zeros", ZerosLike},
    {"aten.zero_", ZerosLike}, {"aten.copy_", AtenCopy},
};

// ONNX import's gradient ops by their forward op's type: they read their
// operands as ImportGradient lays them out (TensorFlow's ReluGrad does not).
constexpr Entry kImportGradientKernels[] = {
    {"Relu", ReluImportGrad}, {"Sigmoid", SigmoidImportGrad}, {"Tanh", TanhImportGrad}, {"Clip", ClipImportGrad},
    {"Reshape", ReshapeImportGrad}, {"Flatten", ReshapeImportGrad}, {"Identity", ReshapeImportGrad},
    {"Squeeze", ReshapeImportGrad}, {"Unsqueeze", ReshapeImportGrad}, {"Dropout", ReshapeImportGrad},
    {"GlobalAveragePool", GlobalAveragePoolImportGrad}, {"MaxPool", MaxPoolImportGrad},
    {"AveragePool", AveragePoolImportGrad}, {"Add", AddImportGrad}, {"Sub", SubImportGrad},
    {"Mul", MulImportGrad}, {"Div", DivImportGrad}, {"Conv", ConvImportGrad},
    {"BatchNormalization", BatchNormalizationImportGrad}, {"Gemm", GemmImportGrad}, {"MatMul", GemmImportGrad},
    {"Concat", ConcatImportGrad}, {"Loss", LossImportGrad}, {"Pad", PadImportGrad}, {"Slice", SliceImportGrad},
    {"Softmax", SoftmaxImportGrad}, {"LogSoftmax", LogSoftmaxImportGrad}, {"Transpose", TransposeImportGrad},
};
// clang-format on

template <size_t N>
KernelFn Lookup(const std::array<Entry, N>& sorted, std::string_view op_type) {
  auto it = std::lower_bound(sorted.begin(), sorted.end(), op_type,
                             [](const Entry& e, std::string_view type) { return e.type < type; });
  return it != sorted.end() && it->type == op_type ? it->kernel : nullptr;
}

template <size_t N>
std::array<Entry, N> Sorted(const Entry (&entries)[N]) {
  std::array<Entry, N> table;
  std::copy(std::begin(entries), std::end(entries), table.begin());
  std::sort(table.begin(), table.end(), [](const Entry& a, const Entry& b) { return a.type < b.type; });
  return table;
}

}  // namespace

KernelFn FindKernel(std::string_view op_type) {
  static const auto sorted = Sorted(kKernels);
  return Lookup(sorted, op_type);
}

KernelFn FindImportGradientKernel(std::string_view forward_type) {
  static const auto sorted = Sorted(kImportGradientKernels);
  return Lookup(sorted, forward_type);
}

KernelFn KernelFor(const Graph& graph, int32_t op, std::optional<ImportGradient>* layout) {
  *layout = FindImportGradient(graph, op);
  const std::string_view type = graph.op(op).type;
  if (*layout) return FindImportGradientKernel(type.substr(0, type.size() - 4));  // less "Grad"
  return FindKernel(type);
}

}  // namespace devplace
