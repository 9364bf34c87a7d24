#include "models/layers.h"

#include <tuple>

#include "models/checked.h"

namespace devplace::layers {

using namespace tf;

namespace {

// The moving averages move in the training step (UPDATE_OPS):
// stat -= (stat - batch_stat) * (1 - decay).
void UpdateMovingAverages(B& b, Tensor mean, Tensor batch_mean, Tensor variance, Tensor batch_variance) {
  auto update = b.UpdateScope();
  const int64_t channels = b.shape(mean)[0];
  for (auto [stat, batch_stat, label] : {std::tuple{mean, batch_mean, "moving_mean"},
                                         std::tuple{variance, batch_variance, "moving_variance"}}) {
    auto beside = b.ColocateWith(stat);  // as assign_moving_average does
    const std::string prefix = std::string("AssignMovingAvg_") + label;
    Tensor delta = Plain(b, prefix + "/sub", "Sub", {stat, batch_stat}, {channels}, double(channels));
    Tensor step = Plain(b, prefix + "/mul", "Mul", {delta}, {channels}, double(channels));
    b.Emit({prefix, "AssignSub", {stat, step}, {}, double(channels)});
  }
}

}  // namespace

LstmState LstmCell(B& b, const std::string& name, Tensor x, LstmState state, Tensor kernel, Tensor bias) {
  auto scope = b.NameScope(name);
  Tensor inputs = Concat(b, "concat", {x, state.h}, 1);
  Tensor gates = BiasAdd(b, "BiasAdd", MatMul(b, "MatMul", inputs, kernel), bias);
  std::vector<Tensor> ijfo = Split(b, "split", gates, 1, 4);
  Tensor forget_bias = Const(b, "add/y", {});
  Tensor forget = Unary(b, "Sigmoid", "Sigmoid", Add(b, "add", ijfo[2], forget_bias));
  Tensor kept = Mul(b, "mul", state.c, forget);
  // Each gate's op in a statement of its own, right-hand operand first
  // (op order: tf_ops.h).
  const Tensor tanh_j = Unary(b, "Tanh", "Tanh", ijfo[1]);
  const Tensor sigmoid_i = Unary(b, "Sigmoid", "Sigmoid_1", ijfo[0]);
  Tensor written = Mul(b, "mul_1", sigmoid_i, tanh_j);
  Tensor c = Add(b, "add_1", kept, written);
  const Tensor sigmoid_o = Unary(b, "Sigmoid", "Sigmoid_2", ijfo[3]);
  const Tensor tanh_c = Unary(b, "Tanh", "Tanh_1", c);
  Tensor h = Mul(b, "mul_2", tanh_c, sigmoid_o);
  return {c, h};
}

LstmState ZeroState(B& b, const std::string& name, int64_t batch, int64_t hidden) {
  auto scope = b.NameScope(name);
  return {Const(b, "zeros", {batch, hidden}), Const(b, "zeros_1", {batch, hidden})};
}

Tensor Dense(B& b, const std::string& name, Tensor x, int64_t units, bool use_bias) {
  auto scope = b.NameScope(name);
  Tensor kernel = b.Variable("kernel", {b.shape(x).back(), units});
  Tensor y = MatMul(b, "MatMul", x, kernel);
  if (!use_bias) return y;
  Tensor bias = b.Variable("bias", {units});
  return BiasAdd(b, "BiasAdd", y, bias);
}

Tensor BatchNorm(B& b, const std::string& name, Tensor x) {
  auto scope = b.NameScope(name);
  const int64_t channels = b.shape(x).back();
  Tensor beta = b.Variable("beta", {channels});
  Tensor moving_mean = b.Variable("moving_mean", {channels}, {.trainable = false});
  Tensor moving_variance = b.Variable("moving_variance", {channels}, {.trainable = false});
  std::vector<int> axes;
  for (int i = 0; i + 1 < static_cast<int>(b.shape(x).size()); ++i) axes.push_back(i);

  // tf.nn.moments.
  Tensor mean = Reduce(b, "Mean", "moments/mean", x, axes, true);
  Tensor centre = Unary(b, "StopGradient", "moments/StopGradient", mean);
  Tensor squares = Binary(b, "SquaredDifference", "moments/SquaredDifference", x, centre);
  Tensor variance = Reduce(b, "Mean", "moments/variance", squares, axes, true);
  Tensor mean_c = Reshape(b, "moments/Squeeze", mean, {channels});
  Tensor variance_c = Reshape(b, "moments/Squeeze_1", variance, {channels});

  // tf.nn.batch_normalization without a scale.
  Tensor epsilon = Const(b, "batchnorm/add/y", {});
  Tensor inverse = Unary(b, "Rsqrt", "batchnorm/Rsqrt", Add(b, "batchnorm/add", variance_c, epsilon));
  Tensor scaled = Mul(b, "batchnorm/mul", x, inverse);
  Tensor shift = Sub(b, "batchnorm/sub", beta, Mul(b, "batchnorm/mul_1", mean_c, inverse));
  Tensor y = Add(b, "batchnorm/add_1", scaled, shift);

  UpdateMovingAverages(b, moving_mean, mean_c, moving_variance, variance_c);
  return y;
}

Tensor FusedBatchNorm(B& b, const std::string& name, Tensor x) {
  auto scope = b.NameScope(name);
  const int64_t channels = b.shape(x).back();
  Tensor gamma = b.Variable("gamma", {channels});
  Tensor beta = b.Variable("beta", {channels});
  Tensor moving_mean = b.Variable("moving_mean", {channels}, {.trainable = false});
  Tensor moving_variance = b.Variable("moving_variance", {channels}, {.trainable = false});
  tf::FusedBatchNormResult r = tf::FusedBatchNorm(b, "FusedBatchNorm", x, gamma, beta);
  UpdateMovingAverages(b, moving_mean, r.mean, moving_variance, r.variance);
  return r.y;
}

Tensor LayerNorm(B& b, const std::string& name, Tensor x) {
  auto scope = b.NameScope(name);
  const Shape s = b.shape(x);
  const int64_t width = s.back();
  Tensor beta = b.Variable("beta", {width});
  Tensor gamma = b.Variable("gamma", {width});
  const int last = static_cast<int>(s.size()) - 1;
  Tensor mean = Reduce(b, "Mean", "moments/mean", x, {last}, true);
  Tensor centre = Unary(b, "StopGradient", "moments/StopGradient", mean);
  Tensor squares = Binary(b, "SquaredDifference", "moments/SquaredDifference", x, centre);
  Tensor variance = Reduce(b, "Mean", "moments/variance", squares, {last}, true);
  Tensor epsilon = Const(b, "batchnorm/add/y", {});
  Tensor inverse = Unary(b, "Rsqrt", "batchnorm/Rsqrt", Add(b, "batchnorm/add", variance, epsilon));
  Tensor scale = Mul(b, "batchnorm/mul", inverse, gamma);
  Tensor scaled = Mul(b, "batchnorm/mul_1", x, scale);
  Tensor shift = Sub(b, "batchnorm/sub", beta, Mul(b, "batchnorm/mul_2", mean, scale));
  return Add(b, "batchnorm/add_1", scaled, shift);
}

Tensor StepIds(B& b, const std::string& name, Tensor ids) {
  return Plain(b, name, "StridedSlice", {ids}, {b.shape(ids)[0]}, 0, "int32");
}

Tensor EmbeddingStep(B& b, const std::string& group, int32_t stage, Tensor embedding, Tensor ids) {
  auto g = b.GroupScope(group, stage);
  auto name = b.NameScope(group);
  return Gather(b, "embedding_lookup", embedding, StepIds(b, "strided_slice", ids));
}

Tensor StackedLstmStep(B& b, const std::string& prefix, int64_t step, Tensor x, std::vector<LstmState>& state,
                       const std::vector<Tensor>& kernels, const std::vector<Tensor>& biases) {
  for (size_t l = 0; l < state.size(); ++l) {
    const std::string group = prefix + "layer_" + std::to_string(l) + "/cell_" + std::to_string(step);
    auto g = b.GroupScope(group, models::ToInt32(static_cast<int64_t>(l), "expert stage"));
    auto name = b.NameScope(group);
    if (step == 0) state[l] = ZeroState(b, "initial_state", b.shape(x)[0], b.shape(kernels[l])[1] / 4);
    state[l] = LstmCell(b, "lstm_cell", x, state[l], kernels[l], biases[l]);
    x = state[l].h;
  }
  return x;
}

}  // namespace devplace::layers
