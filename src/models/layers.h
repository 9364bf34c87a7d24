// Layers several models share, op for op as TensorFlow 1.x builds them: the
// BasicLSTMCell, a dense layer, the non-fused batch norm of TF-slim, layer
// norm, and the input pipeline's per-step slices.
#pragma once

#include <string>
#include <vector>

#include "models/tf_ops.h"

namespace devplace::layers {

using tf::B;
using tf::Shape;

struct LstmState {
  Tensor c;
  Tensor h;
};

// tf.nn.rnn_cell.BasicLSTMCell: one MatMul over [x, h] into the four gates
// (i, j, f, o), then the elementwise update:
//   c' = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j)
//   h' = tanh(c') * sigmoid(o)
LstmState LstmCell(B& b, const std::string& name, Tensor x, LstmState state, Tensor kernel, Tensor bias);

// The zero state an RNN starts from.
LstmState ZeroState(B& b, const std::string& name, int64_t batch, int64_t hidden);

// x @ kernel + bias, with its variables made here ("kernel", "bias").
Tensor Dense(B& b, const std::string& name, Tensor x, int64_t units, bool use_bias = true);

// TF-slim batch_norm as Inception-V3 trains it in TF 1.x: not fused, no
// scale (gamma), epsilon 0.001; tf.nn.moments over all but the channel
// axis, and the moving mean and variance updated in the step.
Tensor BatchNorm(B& b, const std::string& name, Tensor x);

// tf.layers.batch_normalization(fused=True) in training: gamma and beta,
// and the moving averages updated in the step.
Tensor FusedBatchNorm(B& b, const std::string& name, Tensor x);

// tf.contrib.layers.layer_norm over the last axis.
Tensor LayerNorm(B& b, const std::string& name, Tensor x);

// One column of a [batch, time] id matrix: the ids of step t.
Tensor StepIds(B& b, const std::string& name, Tensor ids);

// The embedding lookup of one time step, in its own co-location group
// `group` (2017 §4.1: each embedding lookup is a group) at expert `stage`.
Tensor EmbeddingStep(B& b, const std::string& group, int32_t stage, Tensor embedding, Tensor ids);

// One time step through a stack of LSTM layers, each cell its own
// co-location group "<prefix>layer_<l>/cell_<step>" at expert stage l;
// `state` starts from zero at step 0. Returns the top layer's output.
Tensor StackedLstmStep(B& b, const std::string& prefix, int64_t step, Tensor x, std::vector<LstmState>& state,
                       const std::vector<Tensor>& kernels, const std::vector<Tensor>& biases);

}  // namespace devplace::layers
