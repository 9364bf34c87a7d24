// WaveNet (van den Oord et al. 2016) as the widely used TensorFlow
// implementation (ibab/tensorflow-wavenet) trains it: one-hot mu-law input,
// a causal convolution, then stacks of dilated causal convolutions (dilation
// 1, 2, 4, ... per stack) with gated tanh x sigmoid activations, 1x1
// residual and skip convolutions; the skips are summed and go through
// ReLU, 1x1, ReLU, 1x1 to a softmax over the quantization levels. Adam.
// GDP places its 2-stack 18-layer and 4-stack 36-layer versions.
//
// A 1-D convolution is TensorFlow's conv1d: ExpandDims, Conv2D, Squeeze.
// Convolutions are VALID, so the signal shortens by the dilation at each
// layer, as in the implementation.
//
// Expert placement: stack s on stage s, the input layers with the first
// stack, the output layers with the last.
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/checked.h"
#include "models/tf_ops.h"
#include "models/training_graph_builder.h"

namespace devplace {

using namespace tf;

namespace {

// tf.nn.conv1d (+ bias): [batch, time, in] -> [batch, time', out].
Tensor Conv1d(B& b, const std::string& name, Tensor x, int64_t out, int width, int dilation, bool bias = true) {
  auto scope = b.NameScope(name);
  const Shape s = b.shape(x);
  Tensor filter = b.Variable("weights", {1, width, s[2], out});
  Tensor image = Reshape(b, "ExpandDims", x, {s[0], 1, s[1], s[2]});
  Tensor y = Conv2D(b, "Conv2D", image, filter, 1, Padding::kValid, dilation);
  const Shape ys = b.shape(y);
  y = Reshape(b, "Squeeze", y, {ys[0], ys[2], ys[3]});
  if (!bias) return y;
  return BiasAdd(b, "BiasAdd", y, b.Variable("biases", {out}));
}

// The last `time` steps of x.
Tensor LastSteps(B& b, const std::string& name, Tensor x, int64_t time) {
  const Shape s = b.shape(x);
  return Slice(b, name, x, {s[0], time, s[2]});
}

}  // namespace

Graph MakeWaveNet(const WaveNetConfig& config) {
  // Dilations double up to 2^(per_stack-1): bounded so that the shifts
  // below stay well inside an int.
  Require(config.stacks >= 1 && config.layers % config.stacks == 0 &&
              config.layers / config.stacks <= kMaxWaveNetLayersPerStack,
          "model '" + config.name + "': layers must be a multiple of stacks, at most " +
              std::to_string(kMaxWaveNetLayersPerStack) + " per stack");
  const int64_t per_stack = config.layers / config.stacks;
  const int64_t N = config.batch, T = config.samples, Q = config.quantization;
  B b(config.name, Optimizer::kAdam);

  std::vector<Tensor> input;
  {
    auto host = b.HostScope();
    input = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {},
                       {TensorSpec::Make({N, T}, "int32"), TensorSpec::Make({N, T}, "int32")}, 0});
  }

  auto scope = b.NameScope("wavenet");
  Tensor x;
  {
    auto stage = b.StageScope(0);
    Tensor one_hot = Plain(b, "one_hot", "OneHot", {input[0]}, {N, T, Q}, double(N * T * Q));
    x = Conv1d(b, "causal_layer", one_hot, config.residual_channels, 2, 1, false);
  }

  // Each layer's skip output covers the samples that the output keeps.
  int64_t receptive = 1;
  for (int64_t l = 0; l < config.layers; ++l) receptive += int64_t{1} << (l % per_stack);
  const int64_t out_time = T - receptive;

  std::vector<Tensor> skips;
  for (int64_t l = 0; l < config.layers; ++l) {
    const int32_t stack = models::ToInt32(l / per_stack, "expert stage");
    const int dilation = 1 << (l % per_stack);
    auto stage = b.StageScope(stack);
    auto name = b.NameScope("dilated_stack/layer" + std::to_string(l));
    Tensor filter = Conv1d(b, "conv_filter", x, config.dilation_channels, 2, dilation);
    Tensor gate = Conv1d(b, "conv_gate", x, config.dilation_channels, 2, dilation);
    // The gate's Sigmoid comes before the Tanh (op order: tf_ops.h).
    const Tensor gate_sigmoid = Unary(b, "Sigmoid", "Sigmoid", gate);
    const Tensor filter_tanh = Unary(b, "Tanh", "Tanh", filter);
    Tensor out = Mul(b, "mul", filter_tanh, gate_sigmoid);
    skips.push_back(Conv1d(b, "skip", LastSteps(b, "skip_cut", out, out_time), config.skip_channels, 1, 1));
    // The last layer's residual output would feed nothing: no gradient
    // reaches it, so it is left out (TensorFlow prunes it from the step).
    if (l + 1 == config.layers) break;
    Tensor dense = Conv1d(b, "dense", out, config.residual_channels, 1, 1);
    x = Add(b, "add", LastSteps(b, "input_cut", x, b.shape(dense)[1]), dense);
  }

  Tensor loss;
  {
    auto stage = b.StageScope(models::ToInt32(config.stacks - 1, "expert stage"));
    auto name = b.NameScope("postprocessing");
    Tensor total = AddN(b, "AddN", skips);
    Tensor h = Conv1d(b, "postprocess1", Unary(b, "Relu", "Relu", total), config.skip_channels, 1, 1);
    Tensor logits = Conv1d(b, "postprocess2", Unary(b, "Relu", "Relu_1", h), Q, 1, 1);
    Tensor flat = Reshape(b, "Reshape", logits, {N * out_time, Q});
    Tensor target = Plain(b, "one_hot_target", "OneHot", {input[1]}, {N * out_time, Q}, double(N * out_time * Q));
    loss = Reduce(b, "Mean", "Mean", SoftmaxCrossEntropy(b, "xent", flat, target).loss, {0}, false);
  }
  b.Minimize(loss);
  return b.Finish(models::ToInt32(config.stacks, "expert stage"));
}

}  // namespace devplace
