// TensorFlow ops as the papers' graphs contain them: each helper adds one
// forward op with its output shapes and FLOPs, and registers the gradient
// rule TensorFlow 1.x uses for it, so the backward pass mirrors the forward
// one op by op (a MatMul's gradient is two MatMuls, a Conv2D's a
// Conv2DBackpropInput and a Conv2DBackpropFilter, a broadcasting Add's the
// Shape / BroadcastGradientArgs / Sum / Reshape pattern).
//
// FLOPs: a matmul is 2*m*n*k, a convolution 2*N*Hout*Wout*Cout*Cin*kh*kw,
// elementwise ops about one per element (a few for transcendental ones).
//
// A helper numbers its op as it is called, and the numbering reaches the
// grouping, the placers and every seeded search. So a call makes at most one
// op from its arguments: C++ leaves the order of a call's arguments
// unspecified (GCC evaluates them right to left, clang left to right), so
// two op-making arguments get a statement each. Where the models had such
// calls, the statements keep GCC's order (the right-most argument first),
// the models' op order since they were written (models_test pins it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/training_graph_builder.h"

namespace devplace::tf {

using Shape = std::vector<int64_t>;
using B = TrainingGraphBuilder;

int64_t Elements(const Shape& shape);

// An op without a gradient (input pipelines, constants, shapes, backward
// ops): one output.
Tensor Plain(B& b, const std::string& name, const std::string& type, std::vector<Tensor> inputs, Shape shape,
             double flops = 0, const std::string& dtype = "float32");

Tensor Const(B& b, const std::string& name, Shape shape, const std::string& dtype = "float32");

// Linear algebra.
Tensor MatMul(B& b, const std::string& name, Tensor a, Tensor w, bool transpose_a = false, bool transpose_b = false);
Tensor BatchMatMul(B& b, const std::string& name, Tensor x, Tensor y, bool adj_x = false, bool adj_y = false);
Tensor BiasAdd(B& b, const std::string& name, Tensor x, Tensor bias);

// Broadcasting binary ops: "Add", "Sub", "Mul", "RealDiv", "SquaredDifference", "Maximum".
Tensor Binary(B& b, const std::string& type, const std::string& name, Tensor x, Tensor y);
inline Tensor Add(B& b, const std::string& name, Tensor x, Tensor y) { return Binary(b, "Add", name, x, y); }
inline Tensor Sub(B& b, const std::string& name, Tensor x, Tensor y) { return Binary(b, "Sub", name, x, y); }
inline Tensor Mul(B& b, const std::string& name, Tensor x, Tensor y) { return Binary(b, "Mul", name, x, y); }
Tensor AddN(B& b, const std::string& name, const std::vector<Tensor>& xs);
// sum(x^2) / 2, a scalar: weight decay's term.
Tensor L2Loss(B& b, const std::string& name, Tensor x);

// Unary elementwise ops: "Sigmoid", "Tanh", "Relu", "Rsqrt", "Sqrt", "Exp",
// "Neg", "Square", "Identity", "StopGradient", "Floor", "Pow" (by a constant).
Tensor Unary(B& b, const std::string& type, const std::string& name, Tensor x);

// Shape ops.
std::vector<Tensor> Split(B& b, const std::string& name, Tensor x, int axis, int parts);
Tensor Concat(B& b, const std::string& name, const std::vector<Tensor>& xs, int axis);
Tensor Pack(B& b, const std::string& name, const std::vector<Tensor>& xs, int axis);
Tensor Reshape(B& b, const std::string& name, Tensor x, Shape shape);
Tensor Transpose(B& b, const std::string& name, Tensor x, const std::vector<int>& perm);
Tensor Slice(B& b, const std::string& name, Tensor x, Shape size);  // a block of x, with a gradient (Pad)
Tensor Pad(B& b, const std::string& name, Tensor x, Shape padded);

// Reductions over `axes`: "Sum", "Mean".
Tensor Reduce(B& b, const std::string& type, const std::string& name, Tensor x, const std::vector<int>& axes,
              bool keep_dims);

// Softmax over the last axis, and the fused softmax cross-entropies, whose
// second output (the gradient of the loss w.r.t. the logits) is kept for
// the backward pass.
Tensor Softmax(B& b, const std::string& name, Tensor logits);
struct CrossEntropy {
  Tensor loss;      // [batch]
  Tensor backprop;  // [batch, classes]
};
CrossEntropy SparseSoftmaxCrossEntropy(B& b, const std::string& name, Tensor logits, Tensor labels);
CrossEntropy SoftmaxCrossEntropy(B& b, const std::string& name, Tensor logits, Tensor labels);

// Embedding lookup: rows of `params` at `indices`; its gradient is sparse.
Tensor Gather(B& b, const std::string& name, Tensor params, Tensor indices);

// Convolutions and pooling, NHWC; filters [kh, kw, in, out] (depthwise:
// [kh, kw, in, multiplier]).
enum class Padding { kSame, kValid };
Tensor Conv2D(B& b, const std::string& name, Tensor x, Tensor filter, int stride, Padding padding,
              int dilation = 1);
Tensor DepthwiseConv2D(B& b, const std::string& name, Tensor x, Tensor filter, int stride, Padding padding);
// "MaxPool" or "AvgPool".
Tensor Pool(B& b, const std::string& type, const std::string& name, Tensor x, int kh, int kw, int stride,
            Padding padding);

// tf.nn.fused_batch_norm in training mode over NHWC: returns the output
// and the batch mean and variance ([C]); the backward pass is one
// FusedBatchNormGrad.
struct FusedBatchNormResult {
  Tensor y, mean, variance;
};
FusedBatchNormResult FusedBatchNorm(B& b, const std::string& name, Tensor x, Tensor scale, Tensor offset);

// tf.nn.dropout (TF 1.x): a random mask kept for the backward pass.
Tensor Dropout(B& b, const std::string& name, Tensor x);

}  // namespace devplace::tf
