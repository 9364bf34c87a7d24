#include "cost/cost_model.h"

#include <algorithm>
#include <initializer_list>
#include <unordered_map>

namespace devplace {

namespace {

using Kinds = std::unordered_map<std::string_view, OpKind>;

void Put(Kinds& kinds, OpKind kind, std::initializer_list<std::string_view> types) {
  for (std::string_view type : types) kinds.emplace(type, kind);
}

// TensorFlow (TF1 and TF2) and ONNX names share one table: where both use a
// name (MatMul, Softmax, Relu, ...) it means the same. The exception is
// Sum/Mean/Max/Min, reductions in TensorFlow and element-wise in ONNX; they
// are listed as reductions, and both kinds have the same efficiency.
const Kinds& TfAndOnnxKinds() {
  static const Kinds kinds = [] {
    Kinds k;
    Put(k, OpKind::kMatMul,
        {// TensorFlow
         "MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "SparseMatMul", "_FusedMatMul", "Einsum",
         "MatMulGrad", "BlockLSTM", "BlockLSTMV2", "LSTMBlockCell", "GRUBlockCell", "CudnnRNN", "CudnnRNNV2",
         "CudnnRNNV3", "BlockLSTMGrad", "BlockLSTMGradV2", "LSTMBlockCellGrad", "GRUBlockCellGrad",
         "CudnnRNNBackprop", "CudnnRNNBackpropV2", "CudnnRNNBackpropV3",
         // ONNX (Einsum and MatMul above); recurrent layers are their gates' products
         "Gemm", "MatMulInteger", "QLinearMatMul", "LSTM", "GRU", "RNN"});
    Put(k, OpKind::kConvolution,
        {"Conv1D", "Conv2D", "Conv3D", "DepthwiseConv2dNative", "_FusedConv2D",  // TensorFlow
         "Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv"});   // ONNX
    Put(k, OpKind::kConvolutionGradient,
        {"Conv1DBackpropInput", "Conv1DBackpropFilter", "Conv2DBackpropInput", "Conv2DBackpropFilter",
         "Conv3DBackpropInput", "Conv3DBackpropFilter", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
         "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter"});
    Put(k, OpKind::kElementwise,
        {// TensorFlow
         "Add", "AddV2", "AddN", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod", "Maximum",
         "Minimum", "Neg", "Abs", "Sign", "Square", "Sqrt", "Rsqrt", "Exp", "Log", "Log1p", "Pow", "Reciprocal",
         "Floor", "Ceil", "Round", "Sin", "Cos", "Tanh", "Sigmoid", "Relu", "Relu6", "Elu", "Selu", "Gelu",
         "LeakyRelu", "Softplus", "Erf", "BiasAdd", "BiasAddV1", "SquaredDifference", "Select", "SelectV2", "Equal",
         "NotEqual", "Greater", "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr", "LogicalNot",
         "RandomUniform", "RandomStandardNormal", "TruncatedNormal", "ReluGrad", "Relu6Grad", "EluGrad",
         "SeluGrad", "TanhGrad", "SigmoidGrad", "RsqrtGrad", "SqrtGrad", "ReciprocalGrad", "SoftplusGrad",
         "LeakyReluGrad",
         // ONNX
         "PRelu", "HardSigmoid", "HardSwish", "Clip", "Where", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
         "Softsign", "Mish", "IsNaN", "IsInf", "Mod", "ThresholdedRelu", "Celu", "BitShift", "Resize", "Upsample",
         "Dropout", "QuantizeLinear", "DequantizeLinear", "Shrink"});
    Put(k, OpKind::kReduction,
        {// TensorFlow
         "Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin", "L2Loss", "Softmax", "LogSoftmax",
         "SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropy",
         "BiasAddGrad", "MaxPool", "MaxPoolV2", "MaxPool3D", "AvgPool", "AvgPool3D", "MaxPoolGrad", "MaxPoolGradV2",
         "MaxPool3DGrad", "AvgPoolGrad", "AvgPool3DGrad", "UnsortedSegmentSum", "SegmentSum", "Cumsum", "TopKV2",
         // ONNX, and the loss ONNX import adds (a criterion over the outputs)
         "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
         "ReduceLogSumExp", "ReduceSumSquare", "CumSum", "TopK", "Hardmax", "AveragePool", "LpPool",
         "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "SoftmaxCrossEntropyLoss",
         "NegativeLogLikelihoodLoss", "Loss"});
    Put(k, OpKind::kNormalization,
        {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad", "FusedBatchNormGradV2",
         "FusedBatchNormGradV3", "BatchNormWithGlobalNormalization", "LRN", "LRNGrad",       // TensorFlow
         "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization",
         "LpNormalization", "MeanVarianceNormalization"});                                  // ONNX
    Put(k, OpKind::kDataMovement,
        {// TensorFlow
         "Reshape", "ExpandDims", "Squeeze", "Transpose", "ConcatV2", "Concat", "ConcatOffset", "Split", "SplitV",
         "Slice", "StridedSlice", "StridedSliceGrad", "Pack", "Unpack", "Tile", "Pad", "PadV2", "MirrorPad",
         "GatherV2", "Gather", "GatherNd", "ScatterNd", "DynamicStitch", "Identity", "IdentityN", "Shape",
         "ShapeN", "Size", "Rank", "Fill", "Range", "OneHot", "Cast", "InvertPermutation", "BroadcastTo",
         "BroadcastGradientArgs", "StopGradient", "PreventGradient", "ReverseV2", "ZerosLike", "OnesLike",
         "Snapshot",
         // ONNX
         "Flatten", "Unsqueeze", "GatherElements", "GatherND", "ConstantOfShape", "Expand", "CastLike", "NonZero",
         "ScatterND", "ScatterElements", "DepthToSpace", "SpaceToDepth", "EyeLike", "Trilu", "SequenceConstruct",
         "SplitToSequence", "ConcatFromSequence", "SequenceAt", "Optional", "OptionalGetElement",
         "OptionalHasElement"});
    Put(k, OpKind::kOptimizer,
        {"ApplyAdam", "ApplyMomentum", "ApplyRMSProp", "ApplyGradientDescent", "ApplyAdagrad", "ResourceApplyAdam",
         "ResourceApplyMomentum", "ResourceApplyRMSProp", "ResourceApplyGradientDescent", "ResourceApplyAdagrad",
         "SparseApplyMomentum", "SparseApplyRMSProp", "SparseApplyAdagrad", "ResourceSparseApplyMomentum",
         "ResourceSparseApplyAdagrad", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp",
         "AssignAddVariableOp", "AssignSubVariableOp", "ScatterAdd", "ScatterSub", "ScatterUpdate",
         "ResourceScatterAdd"});
    Put(k, OpKind::kSource,
        {"VariableV2", "Variable", "VarHandleOp", "ReadVariableOp", "Const", "Placeholder", "PlaceholderWithDefault",
         "IteratorGetNext", "IteratorGetNextSync",  // TensorFlow
         "Input", "Constant"});                     // ONNX import (and tools/export_pytorch.py)
    // Deliberately other: they do no arithmetic worth a roofline, or
    // nothing at all.
    Put(k, OpKind::kOther, {"NoOp", "Assert", "ControlTrigger", "Print", "PrintV2", "CheckNumerics"});
    return k;
  }();
  return kinds;
}

// PyTorch's aten names as tools/export_pytorch.py writes them ("aten.mm"),
// without the prefix, the in-place "_" suffix or the "_foreach_" prefix.
const Kinds& AtenKinds() {
  static const Kinds kinds = [] {
    Kinds k;
    Put(k, OpKind::kMatMul,
        {"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "einsum", "mv", "addmv", "dot", "lstm", "gru",
         "rnn_tanh", "rnn_relu", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
         "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention"});
    Put(k, OpKind::kConvolution,
        {"convolution", "_convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
         "conv_transpose3d", "cudnn_convolution", "cudnn_convolution_transpose", "mkldnn_convolution"});
    Put(k, OpKind::kElementwise,
        {"add", "sub", "rsub", "mul", "div", "neg", "abs", "sign", "sgn", "exp", "log", "log1p", "pow", "sqrt",
         "rsqrt", "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "gelu", "silu", "mish", "hardtanh",
         "hardswish", "hardsigmoid", "leaky_relu", "elu", "threshold", "clamp", "clamp_min", "clamp_max", "where",
         "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or",
         "bitwise_not", "minimum", "maximum", "addcmul", "addcdiv", "lerp", "floor", "ceil", "round", "erf",
         "masked_fill", "fill", "native_dropout", "dropout", "bernoulli", "rand", "rand_like", "randn",
         "randn_like", "square", "softplus"});
    Put(k, OpKind::kReduction,
        {"sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin", "var", "var_mean", "std",
         "logsumexp", "_softmax", "_log_softmax", "softmax", "log_softmax", "nll_loss_forward", "nll_loss2d_forward",
         "nll_loss", "nll_loss2d", "mse_loss", "cross_entropy_loss", "max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool2d",
         "avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d", "adaptive_max_pool2d", "cumsum",
         "topk", "norm", "linalg_vector_norm", "embedding_dense_backward"});
    Put(k, OpKind::kNormalization,
        {"native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_functional",
         "_native_batch_norm_legit_no_training", "cudnn_batch_norm", "batch_norm", "native_layer_norm",
         "layer_norm", "native_group_norm", "group_norm", "instance_norm"});
    Put(k, OpKind::kDataMovement,
        {// the exporter's views (_VIEWS)
         "view", "_unsafe_view", "t", "transpose", "permute", "expand", "detach", "alias", "unsqueeze", "squeeze",
         "slice", "select", "as_strided", "reshape", "lift_fresh_copy", "_reshape_alias", "split", "unbind",
         // copies, fills and gathers
         "cat", "stack", "gather", "scatter", "scatter_add", "index", "index_put", "index_select", "index_add",
         "embedding", "zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like", "new_zeros", "new_empty",
         "new_ones", "full", "full_like", "clone", "copy", "_to_copy", "contiguous", "split_with_sizes",
         "constant_pad_nd", "roll", "flip", "repeat", "arange", "scalar_tensor", "expand_as", "narrow",
         "slice_scatter", "select_scatter", "_unsafe_index"});
    return k;
  }();
  return kinds;
}

std::optional<OpKind> Lookup(const Kinds& kinds, std::string_view type) {
  auto it = kinds.find(type);
  if (it == kinds.end()) return std::nullopt;
  return it->second;
}

// The kind of the gradient of an op of kind `forward`: as dear, per FLOP,
// as the forward op, except convolutions, whose gradients run slower.
// Sources and optimizer updates have no gradient.
std::optional<OpKind> GradientKind(OpKind forward) {
  switch (forward) {
    case OpKind::kConvolution:
    case OpKind::kConvolutionGradient: return OpKind::kConvolutionGradient;
    case OpKind::kSource:
    case OpKind::kOptimizer: return std::nullopt;
    default: return forward;
  }
}

std::optional<OpKind> FindAtenKind(std::string_view name) {
  if (name.starts_with("_foreach_")) name.remove_prefix(9);  // one op over a list of tensors
  if (name.size() > 1 && name.ends_with('_')) name.remove_suffix(1);  // in place
  if (auto kind = Lookup(AtenKinds(), name)) return kind;
  // "gelu_backward", "convolution_backward", "_softmax_backward_data": the
  // gradient of the op before "_backward".
  const size_t backward = name.find("_backward");
  if (backward != std::string_view::npos && backward > 0) {
    if (auto kind = Lookup(AtenKinds(), name.substr(0, backward))) return GradientKind(*kind);
  }
  return std::nullopt;
}

}  // namespace

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kMatMul: return "matmul";
    case OpKind::kConvolution: return "convolution";
    case OpKind::kConvolutionGradient: return "convolution gradient";
    case OpKind::kElementwise: return "element-wise";
    case OpKind::kReduction: return "reduction";
    case OpKind::kNormalization: return "normalization";
    case OpKind::kDataMovement: return "data movement";
    case OpKind::kOptimizer: return "optimizer update";
    case OpKind::kSource: return "source";
    case OpKind::kOther: return "other";
  }
  return "other";
}

std::optional<OpKind> FindOpKind(std::string_view op_type) {
  if (op_type.starts_with("aten.")) return FindAtenKind(op_type.substr(5));
  if (auto kind = Lookup(TfAndOnnxKinds(), op_type)) return kind;
  // ONNX import's "ConvGrad", "GemmGrad", ... and TensorFlow's "SqrtGrad":
  // the gradient of the op the name ends in "Grad" after.
  if (op_type.size() > 4 && op_type.ends_with("Grad")) {
    if (auto kind = Lookup(TfAndOnnxKinds(), op_type.substr(0, op_type.size() - 4))) return GradientKind(*kind);
  }
  return std::nullopt;
}

EfficiencyTable::EfficiencyTable(double cpu, double gpu) {
  for (int k = 0; k < kNumOpKinds; ++k) {
    compute[static_cast<int>(DeviceKind::kCpu)][k] = cpu;
    compute[static_cast<int>(DeviceKind::kGpu)][k] = gpu;
  }
}

EfficiencyTable EfficiencyTable::Default() {
  // Other ops: 30% of peak on CPUs, 50% on GPUs.
  EfficiencyTable table(0.3, 0.5);
  auto set = [&table](OpKind op_kind, double cpu, double gpu) {
    table.compute[static_cast<int>(DeviceKind::kCpu)][static_cast<int>(op_kind)] = cpu;
    table.compute[static_cast<int>(DeviceKind::kGpu)][static_cast<int>(op_kind)] = gpu;
  };
  // Dense matmuls reach ~70% of peak on GPUs with cuBLAS and ~50% on CPUs
  // with Eigen/MKL; convolutions somewhat less (cuDNN ~55%, CPU ~35%), their
  // gradients less again.
  set(OpKind::kMatMul, 0.5, 0.7);
  set(OpKind::kConvolution, 0.35, 0.55);
  set(OpKind::kConvolutionGradient, 0.3, 0.45);
  return table;
}

CostModel::CostModel(const Cluster& cluster, OpTimeTable measured, EfficiencyTable efficiency)
    : cluster_(&cluster), measured_(std::move(measured)), efficiency_(std::move(efficiency)) {}

double CostModel::OpTimeUs(const Op& op, int32_t device) const {
  if (!CanRun(op, device)) return kCannotRun;
  const Device& d = cluster_->devices[device];
  if (auto measured = measured_.Find(op, d.kind, d.name)) return *measured;
  const int kind = static_cast<int>(d.kind);
  double compute_s = op.flops / (d.peak_flops_per_s * efficiency_.Compute(op.type, d.kind));
  int64_t traffic_bytes = op.bytes_read + op.bytes_written;
  if (traffic_bytes == 0) {
    // Without explicit traffic, an op at least writes its outputs.
    for (const TensorSpec& t : op.outputs) traffic_bytes += t.bytes;
  }
  double memory_s = static_cast<double>(traffic_bytes) / (d.memory_bandwidth_bytes_per_s * efficiency_.memory[kind]);
  return std::max(compute_s, memory_s) * 1e6 + d.launch_overhead_us;
}

double CostModel::TransferTimeUs(int32_t src, int32_t dst, int64_t bytes) const {
  double total_us = 0;
  for (const Hop& hop : cluster_->Route(src, dst)) total_us += cluster_->HopTimeUs(hop, bytes);
  return total_us;
}

}  // namespace devplace
