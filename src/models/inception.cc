// Inception-V3 (Szegedy et al. 2016) as TF-slim's inception_v3 builds it for
// training in TensorFlow 1.x: every block and branch, each convolution
// followed by a non-fused batch norm (no scale) and a ReLU, the auxiliary
// head off Mixed_6e, label-smoothed softmax losses (the auxiliary one
// weighted 0.4) and weight decay, trained with RMSProp (2017 §4.1). The step is 299x299x3
// images, batch 32.
//
// Co-location groups are the paper's: each branch of each Inception block
// a group (each stem layer, each block's concatenation, the auxiliary head
// and the logits are groups of their own). Expert placement (2017 §4.2):
// contiguous parts with equal numbers of layers: a unit's stage is the
// number of convolution layers before it, so stage s of S lands on GPU
// floor(s * G / S).
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/checked.h"
#include "models/layers.h"
#include "models/training_graph_builder.h"

namespace devplace {

using namespace tf;

namespace {

class InceptionBuilder {
 public:
  explicit InceptionBuilder(B& b) : b_(b) {}

  // slim.conv2d with batch norm and ReLU.
  Tensor ConvBn(const std::string& name, Tensor x, int64_t depth, int kh, int kw, int stride = 1,
                Padding padding = Padding::kSame) {
    auto scope = b_.NameScope(name);
    Tensor weights = b_.Variable("weights", {kh, kw, b_.shape(x)[3], depth});
    Decay(weights);
    Tensor y = Conv2D(b_, "Conv2D", x, weights, stride, padding);
    ++convs_;
    return Unary(b_, "Relu", "Relu", layers::BatchNorm(b_, "BatchNorm", y));
  }

  // A stem layer or an Inception block: a unit of the expert's split.
  void BeginUnit() { stage_ = convs_; }
  int32_t stage() const { return stage_; }

  // A branch: its own co-location group.
  Tensor Branch(const std::string& block, const std::string& branch, const std::function<Tensor()>& body) {
    const std::string group = "InceptionV3/" + block + "/" + branch;
    auto g = b_.GroupScope(group, stage_);
    auto name = b_.NameScope(branch);
    return body();
  }

  // An Inception block: branches, then their concatenation.
  Tensor Block(const std::string& block, const std::vector<std::function<Tensor()>>& branches) {
    BeginUnit();
    auto name = b_.NameScope(block);
    std::vector<Tensor> outs;
    for (size_t i = 0; i < branches.size(); ++i) outs.push_back(Branch(block, "Branch_" + std::to_string(i), branches[i]));
    auto stage = b_.StageScope(stage_);
    return Concat(b_, "concat", outs, 3);
  }

  // A stem layer in a group of its own.
  Tensor Stem(const std::string& name, const std::function<Tensor()>& body) {
    BeginUnit();
    auto g = b_.GroupScope("InceptionV3/" + name, stage_);
    return body();
  }

  int32_t convs() const { return convs_; }

  // Weight decay (inception_v3_arg_scope: 0.00004 on the weights of every
  // batch-normalized convolution): a term of the loss next to the weights.
  // The scale comes before the L2Loss (op order: tf_ops.h).
  void Decay(Tensor weights) {
    auto scope = b_.NameScope("Regularizer");
    const Tensor scale = Const(b_, "scale", {});
    const Tensor l2 = L2Loss(b_, "L2Loss", weights);
    decay_terms_.push_back(Mul(b_, "l2_regularizer", l2, scale));
  }
  const std::vector<Tensor>& decay_terms() const { return decay_terms_; }

 private:
  B& b_;
  std::vector<Tensor> decay_terms_;
  int32_t convs_ = 0;
  int32_t stage_ = 0;
};

// The slim logits layer: a 1x1 convolution with biases, no batch norm.
Tensor Logits(B& b, const std::string& name, Tensor x, int64_t classes) {
  auto scope = b.NameScope(name);
  Tensor weights = b.Variable("weights", {1, 1, b.shape(x)[3], classes});
  Tensor biases = b.Variable("biases", {classes});
  Tensor y = BiasAdd(b, "BiasAdd", Conv2D(b, "Conv2D", x, weights, 1, Padding::kSame), biases);
  return Reshape(b, "Squeeze", y, {b.shape(x)[0], classes});
}

// slim.losses.softmax_cross_entropy with label smoothing 0.1, times `weight`.
Tensor SmoothedLoss(B& b, const std::string& name, Tensor logits, Tensor one_hot) {
  auto scope = b.NameScope(name);
  const Shape s = b.shape(logits);
  Tensor kept = Plain(b, "mul", "Mul", {one_hot}, s, double(Elements(s)));
  Tensor labels = Plain(b, "add", "Add", {kept}, s, double(Elements(s)));
  Tensor per_example = SoftmaxCrossEntropy(b, "xentropy", logits, labels).loss;
  Tensor mean = Reduce(b, "Mean", "value", per_example, {0}, false);
  return Mul(b, "weighted", mean, Const(b, "weight", {}));
}

}  // namespace

Graph MakeInceptionV3(const InceptionConfig& config) {
  const int64_t N = config.batch, C = config.classes;
  B b(config.name, Optimizer::kRmsProp);
  InceptionBuilder net(b);

  std::vector<Tensor> input;
  {
    auto host = b.HostScope();
    input = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {},
                       {TensorSpec::Make({N, config.image, config.image, 3}), TensorSpec::Make({N}, "int64")}, 0});
  }

  auto scope = b.NameScope("InceptionV3");
  const Padding kValid = Padding::kValid;
  Tensor x = input[0];
  x = net.Stem("Conv2d_1a_3x3", [&] { return net.ConvBn("Conv2d_1a_3x3", x, 32, 3, 3, 2, kValid); });
  x = net.Stem("Conv2d_2a_3x3", [&] { return net.ConvBn("Conv2d_2a_3x3", x, 32, 3, 3, 1, kValid); });
  x = net.Stem("Conv2d_2b_3x3", [&] { return net.ConvBn("Conv2d_2b_3x3", x, 64, 3, 3); });
  x = net.Stem("MaxPool_3a_3x3", [&] { return Pool(b, "MaxPool", "MaxPool_3a_3x3/MaxPool", x, 3, 3, 2, kValid); });
  x = net.Stem("Conv2d_3b_1x1", [&] { return net.ConvBn("Conv2d_3b_1x1", x, 80, 1, 1, 1, kValid); });
  x = net.Stem("Conv2d_4a_3x3", [&] { return net.ConvBn("Conv2d_4a_3x3", x, 192, 3, 3, 1, kValid); });
  x = net.Stem("MaxPool_5a_3x3", [&] { return Pool(b, "MaxPool", "MaxPool_5a_3x3/MaxPool", x, 3, 3, 2, kValid); });

  // 35x35: Mixed_5b, 5c, 5d.
  for (auto [block, pool_depth] : {std::pair{"Mixed_5b", 32}, std::pair{"Mixed_5c", 64}, std::pair{"Mixed_5d", 64}}) {
    const Tensor in = x;
    x = net.Block(block, {
        [&] { return net.ConvBn("Conv2d_0a_1x1", in, 64, 1, 1); },
        [&] { return net.ConvBn("Conv2d_0b_5x5", net.ConvBn("Conv2d_0a_1x1", in, 48, 1, 1), 64, 5, 5); },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, 64, 1, 1);
          t = net.ConvBn("Conv2d_0b_3x3", t, 96, 3, 3);
          return net.ConvBn("Conv2d_0c_3x3", t, 96, 3, 3);
        },
        [&, pool_depth = pool_depth] {
          Tensor t = Pool(b, "AvgPool", "AvgPool_0a_3x3/AvgPool", in, 3, 3, 1, Padding::kSame);
          return net.ConvBn("Conv2d_0b_1x1", t, pool_depth, 1, 1);
        }});
  }
  // 35 -> 17: Mixed_6a.
  {
    const Tensor in = x;
    x = net.Block("Mixed_6a", {
        [&] { return net.ConvBn("Conv2d_1a_1x1", in, 384, 3, 3, 2, kValid); },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, 64, 1, 1);
          t = net.ConvBn("Conv2d_0b_3x3", t, 96, 3, 3);
          return net.ConvBn("Conv2d_1a_1x1", t, 96, 3, 3, 2, kValid);
        },
        [&] { return Pool(b, "MaxPool", "MaxPool_1a_3x3/MaxPool", in, 3, 3, 2, kValid); }});
  }
  // 17x17: Mixed_6b..6e with factorized 7x7 convolutions.
  Tensor aux_input;
  for (auto [block, depth] : {std::pair{"Mixed_6b", 128}, std::pair{"Mixed_6c", 160}, std::pair{"Mixed_6d", 160},
                              std::pair{"Mixed_6e", 192}}) {
    const Tensor in = x;
    const int64_t d = depth;
    x = net.Block(block, {
        [&] { return net.ConvBn("Conv2d_0a_1x1", in, 192, 1, 1); },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, d, 1, 1);
          t = net.ConvBn("Conv2d_0b_1x7", t, d, 1, 7);
          return net.ConvBn("Conv2d_0c_7x1", t, 192, 7, 1);
        },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, d, 1, 1);
          t = net.ConvBn("Conv2d_0b_7x1", t, d, 7, 1);
          t = net.ConvBn("Conv2d_0c_1x7", t, d, 1, 7);
          t = net.ConvBn("Conv2d_0d_7x1", t, d, 7, 1);
          return net.ConvBn("Conv2d_0e_1x7", t, 192, 1, 7);
        },
        [&] {
          Tensor t = Pool(b, "AvgPool", "AvgPool_0a_3x3/AvgPool", in, 3, 3, 1, Padding::kSame);
          return net.ConvBn("Conv2d_0b_1x1", t, 192, 1, 1);
        }});
    aux_input = x;
  }
  // The auxiliary head, beside the unit that follows Mixed_6e.
  Tensor aux_logits;
  {
    net.BeginUnit();
    auto g = b.GroupScope("InceptionV3/AuxLogits", net.stage());
    auto name = b.NameScope("AuxLogits");
    Tensor t = Pool(b, "AvgPool", "AvgPool_1a_5x5/AvgPool", aux_input, 5, 5, 3, kValid);
    t = net.ConvBn("Conv2d_1b_1x1", t, 128, 1, 1);
    // TF-slim's _reduced_kernel_size_for_small_input: 5x5, or the whole
    // map when a small image leaves it smaller.
    const int kernel = static_cast<int>(std::min<int64_t>(5, std::min(b.shape(t)[1], b.shape(t)[2])));
    t = net.ConvBn("Conv2d_2a_5x5", t, 768, kernel, kernel, 1, kValid);
    aux_logits = Logits(b, "Conv2d_2b_1x1", t, C);
  }
  // 17 -> 8: Mixed_7a.
  {
    const Tensor in = x;
    x = net.Block("Mixed_7a", {
        [&] { return net.ConvBn("Conv2d_1a_3x3", net.ConvBn("Conv2d_0a_1x1", in, 192, 1, 1), 320, 3, 3, 2, kValid); },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, 192, 1, 1);
          t = net.ConvBn("Conv2d_0b_1x7", t, 192, 1, 7);
          t = net.ConvBn("Conv2d_0c_7x1", t, 192, 7, 1);
          return net.ConvBn("Conv2d_1a_3x3", t, 192, 3, 3, 2, kValid);
        },
        [&] { return Pool(b, "MaxPool", "MaxPool_1a_3x3/MaxPool", in, 3, 3, 2, kValid); }});
  }
  // 8x8: Mixed_7b, 7c with expanded filter banks.
  for (const char* block : {"Mixed_7b", "Mixed_7c"}) {
    const Tensor in = x;
    x = net.Block(block, {
        [&] { return net.ConvBn("Conv2d_0a_1x1", in, 320, 1, 1); },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, 384, 1, 1);
          return Concat(b, "concat", {net.ConvBn("Conv2d_0b_1x3", t, 384, 1, 3), net.ConvBn("Conv2d_0b_3x1", t, 384, 3, 1)}, 3);
        },
        [&] {
          Tensor t = net.ConvBn("Conv2d_0a_1x1", in, 448, 1, 1);
          t = net.ConvBn("Conv2d_0b_3x3", t, 384, 3, 3);
          return Concat(b, "concat", {net.ConvBn("Conv2d_0c_1x3", t, 384, 1, 3), net.ConvBn("Conv2d_0d_3x1", t, 384, 3, 1)}, 3);
        },
        [&] {
          Tensor t = Pool(b, "AvgPool", "AvgPool_0a_3x3/AvgPool", in, 3, 3, 1, Padding::kSame);
          return net.ConvBn("Conv2d_0b_1x1", t, 192, 1, 1);
        }});
  }
  // Logits, and the losses.
  Tensor logits;
  {
    net.BeginUnit();
    auto g = b.GroupScope("InceptionV3/Logits", net.stage());
    auto name = b.NameScope("Logits");
    const Shape s = b.shape(x);
    Tensor pooled = Pool(b, "AvgPool", "AvgPool_1a_8x8/AvgPool", x, models::ToInt32(s[1], "pool size"),
                         models::ToInt32(s[2], "pool size"), 2, kValid);
    logits = Logits(b, "Conv2d_1c_1x1", Dropout(b, "Dropout_1b", pooled), C);
  }
  Tensor loss;
  {
    auto g = b.GroupScope("InceptionV3/losses", net.stage());
    auto name = b.NameScope("losses");
    Tensor one_hot = Plain(b, "OneHotEncoding", "OneHot", {input[1]}, {N, C}, double(N * C));
    loss = AddN(b, "total_loss", {SmoothedLoss(b, "softmax_cross_entropy_loss", logits, one_hot),
                                  SmoothedLoss(b, "aux_loss", aux_logits, one_hot),
                                  AddN(b, "regularization_loss", net.decay_terms())});
  }
  b.Minimize(loss);
  return b.Finish(net.convs() + 1);
}

}  // namespace devplace
