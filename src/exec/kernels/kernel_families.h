// The kernels by family, one function per op meaning; kernel_registry.cc
// maps op types (TensorFlow's, ONNX's, PyTorch's) to them.
#pragma once

#include "exec/kernels/kernel.h"

namespace devplace::kernels {

// kernels_math.cc
bool MatMul(KernelCall& c);
bool Sigmoid(KernelCall& c);
bool Silu(KernelCall& c);
bool Gelu(KernelCall& c);
bool Hardswish(KernelCall& c);
bool Hardsigmoid(KernelCall& c);
bool Tanh(KernelCall& c);
bool Relu(KernelCall& c);
bool Exp(KernelCall& c);
bool Log(KernelCall& c);
bool Neg(KernelCall& c);
bool Sqrt(KernelCall& c);
bool Rsqrt(KernelCall& c);
bool Floor(KernelCall& c);
bool Abs(KernelCall& c);
bool Sin(KernelCall& c);
bool Cos(KernelCall& c);
bool Erf(KernelCall& c);
bool Square(KernelCall& c);
bool PowConstant(KernelCall& c);
bool Cast(KernelCall& c);
bool Add(KernelCall& c);
bool Sub(KernelCall& c);
bool Mul(KernelCall& c);
bool Div(KernelCall& c);
bool Maximum(KernelCall& c);
bool Minimum(KernelCall& c);
bool SquaredDifference(KernelCall& c);
bool FloorDiv(KernelCall& c);
bool GreaterEqual(KernelCall& c);
bool SigmoidGrad(KernelCall& c);
bool TanhGrad(KernelCall& c);
bool ReluGrad(KernelCall& c);
bool RsqrtGrad(KernelCall& c);
bool SqrtGrad(KernelCall& c);
bool Select(KernelCall& c);
bool AddN(KernelCall& c);
bool Sum(KernelCall& c);
bool Mean(KernelCall& c);
bool Max(KernelCall& c);
bool L2Loss(KernelCall& c);
bool Softmax(KernelCall& c);
bool LogSoftmax(KernelCall& c);
bool SoftmaxCrossEntropy(KernelCall& c);
bool SparseSoftmaxCrossEntropy(KernelCall& c);
bool ScalarLoss(KernelCall& c);

// kernels_nn.cc: NHWC (TensorFlow) and NCHW (ONNX) convolutions, pooling,
// batch normalization.
bool Conv2D(KernelCall& c);
bool Conv2DBackpropInput(KernelCall& c);
bool Conv2DBackpropFilter(KernelCall& c);
bool DepthwiseConv2D(KernelCall& c);
bool DepthwiseConv2DBackpropInput(KernelCall& c);
bool DepthwiseConv2DBackpropFilter(KernelCall& c);
bool OnnxConv(KernelCall& c);
bool MaxPool(KernelCall& c);
bool AvgPool(KernelCall& c);
bool MaxPoolGrad(KernelCall& c);
bool AvgPoolGrad(KernelCall& c);
bool FusedBatchNorm(KernelCall& c);
bool FusedBatchNormGrad(KernelCall& c);

// kernels_data.cc: sources, data movement, embeddings, optimizer updates.
bool Variable(KernelCall& c);
bool InputBatch(KernelCall& c);
bool Constant(KernelCall& c);
bool RandomUniform(KernelCall& c);
bool Fill(KernelCall& c);
bool ZerosLike(KernelCall& c);
bool ShapeOfInput(KernelCall& c);
bool SizeOfInput(KernelCall& c);
bool ShapeMetadata(KernelCall& c);
bool Range(KernelCall& c);
bool Alias(KernelCall& c);
bool Concat(KernelCall& c);
bool Pack(KernelCall& c);
bool Split(KernelCall& c);
bool Unpack(KernelCall& c);
bool Slice(KernelCall& c);
bool Pad(KernelCall& c);
bool Tile(KernelCall& c);
bool Transpose(KernelCall& c);
bool Gather(KernelCall& c);
bool UnsortedSegmentSum(KernelCall& c);
bool ScatterAdd(KernelCall& c);
bool Assign(KernelCall& c);
bool AssignSub(KernelCall& c);
bool OneHot(KernelCall& c);
bool ApplyAdam(KernelCall& c);
bool ApplyRmsProp(KernelCall& c);
bool ApplyMomentum(KernelCall& c);
bool ApplyGradientDescent(KernelCall& c);

// kernels_import.cc: ONNX's forward ops (NCHW), and the gradient ops
// `devplace import --training` generates, which read their operands as
// ImportGradient (kernel.h) lays them out.
bool MaxPoolEitherLayout(KernelCall& c);
bool OnnxAveragePool(KernelCall& c);
bool OnnxBatchNorm(KernelCall& c);
bool Clip(KernelCall& c);
bool MatMulAddBias(KernelCall& c);
bool ReluImportGrad(KernelCall& c);
bool SigmoidImportGrad(KernelCall& c);
bool TanhImportGrad(KernelCall& c);
bool ClipImportGrad(KernelCall& c);
bool ReshapeImportGrad(KernelCall& c);
bool PadImportGrad(KernelCall& c);
bool SliceImportGrad(KernelCall& c);
bool SoftmaxImportGrad(KernelCall& c);
bool LogSoftmaxImportGrad(KernelCall& c);
bool TransposeImportGrad(KernelCall& c);
bool GlobalAveragePoolImportGrad(KernelCall& c);
bool MaxPoolImportGrad(KernelCall& c);
bool AveragePoolImportGrad(KernelCall& c);
bool AddImportGrad(KernelCall& c);
bool SubImportGrad(KernelCall& c);
bool MulImportGrad(KernelCall& c);
bool DivImportGrad(KernelCall& c);
bool ConvImportGrad(KernelCall& c);
bool BatchNormalizationImportGrad(KernelCall& c);
bool GemmImportGrad(KernelCall& c);
bool ConcatImportGrad(KernelCall& c);
bool LossImportGrad(KernelCall& c);

// kernels_aten.cc: PyTorch's aten ops (tools/export_pytorch.py).
bool AtenConvolutionBackward(KernelCall& c);
bool AtenBatchNorm(KernelCall& c);
bool AtenBatchNormBackward(KernelCall& c);
bool AtenHardtanh(KernelCall& c);
bool AtenHardtanhBackward(KernelCall& c);
bool AtenMaxPoolWithIndices(KernelCall& c);
bool AtenMaxPoolBackward(KernelCall& c);
bool AtenAvgPool(KernelCall& c);
bool AtenAvgPoolBackward(KernelCall& c);
bool AtenAdaptiveAvgPool(KernelCall& c);
bool AtenAdaptiveAvgPoolBackward(KernelCall& c);
bool AtenLogSoftmaxBackward(KernelCall& c);
bool AtenNllLoss(KernelCall& c);
bool AtenNllLossBackward(KernelCall& c);
bool AtenAddcmul(KernelCall& c);
bool AtenAddcdiv(KernelCall& c);
bool AtenBernoulli(KernelCall& c);
bool AtenSigmoidBackward(KernelCall& c);
bool AtenTanhBackward(KernelCall& c);
bool AtenGeluBackward(KernelCall& c);
bool AtenHardswishBackward(KernelCall& c);
bool AtenHardsigmoidBackward(KernelCall& c);
bool AtenSoftmaxBackward(KernelCall& c);
bool AtenCopy(KernelCall& c);
bool AtenTransposeView(KernelCall& c);
bool AtenExpandView(KernelCall& c);

}  // namespace devplace::kernels
