// AmoebaNet-A (Real et al. 2019) for ImageNet, built as the TensorFlow TPU
// implementation (amoeba_net, on NASNet's cell code) builds it: a 3x3 stem
// convolution, two reduction stem cells, then N normal cells, a reduction
// cell, N normal cells, a reduction cell, N normal cells, and a pooled
// softmax head, with weight decay. Cells combine pairs of operations (separable convolutions
// applied twice, poolings, identity, 1x7-7x1 convolutions) over earlier
// hidden states, as the evolved genotype says; batch norm is fused.
// Trained with RMSProp. GDP places it on 4 GPUs.
//
// Expert placement: the usual layer-wise split, each cell (and the stem
// convolution, and the head) a unit with its own stage.
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/layers.h"
#include "models/training_graph_builder.h"

namespace devplace {

using namespace tf;

namespace {

enum class CellOp { kSep3, kSep5, kSep7, kAvg3, kMax3, kNone, kConv1x7 };

struct Genotype {
  std::vector<std::pair<int, CellOp>> ops;  // pairs: (hidden state, op); node i+2 sums pair i
  std::vector<int> concat;                  // hidden states the cell outputs
};

// AmoebaNet-A's evolved cells (Real et al. 2019, Fig. 4).
const Genotype& NormalCell() {
  static const Genotype g{{{0, CellOp::kAvg3}, {0, CellOp::kMax3}, {1, CellOp::kSep3}, {1, CellOp::kNone},
                           {0, CellOp::kNone}, {1, CellOp::kAvg3}, {0, CellOp::kSep3}, {2, CellOp::kSep5},
                           {5, CellOp::kAvg3}, {0, CellOp::kSep3}},
                          {1, 3, 4, 6}};
  return g;
}

const Genotype& ReductionCell() {
  static const Genotype g{{{1, CellOp::kSep3}, {0, CellOp::kAvg3}, {0, CellOp::kMax3}, {2, CellOp::kSep7},
                           {1, CellOp::kMax3}, {0, CellOp::kMax3}, {4, CellOp::kSep3}, {0, CellOp::kConv1x7},
                           {1, CellOp::kAvg3}, {0, CellOp::kSep7}},
                          {2, 3, 4, 5, 6}};
  return g;
}

class AmoebaBuilder {
 public:
  explicit AmoebaBuilder(B& b) : b_(b) {}

  Tensor ReluConvBn(const std::string& name, Tensor x, int64_t filters, int kh, int kw, int stride) {
    auto scope = b_.NameScope(name);
    Tensor w = Decayed(b_.Variable("weights", {kh, kw, b_.shape(x)[3], filters}));
    Tensor y = Conv2D(b_, "Conv2D", Unary(b_, "Relu", "Relu", x), w, stride, Padding::kSame);
    return layers::FusedBatchNorm(b_, "bn", y);
  }

  // Separable convolution (depthwise then 1x1), twice, the first strided.
  Tensor SeparableTwice(const std::string& name, Tensor x, int64_t filters, int k, int stride) {
    auto scope = b_.NameScope(name);
    for (int i = 0; i < 2; ++i) {
      auto inner = b_.NameScope("separable_" + std::to_string(i + 1));
      Tensor depthwise = Decayed(b_.Variable("depthwise_weights", {k, k, b_.shape(x)[3], 1}));
      Tensor pointwise = Decayed(b_.Variable("pointwise_weights", {1, 1, b_.shape(x)[3], filters}));
      Tensor y = DepthwiseConv2D(b_, "depthwise", Unary(b_, "Relu", "Relu", x), depthwise, i == 0 ? stride : 1,
                                 Padding::kSame);
      y = Conv2D(b_, "pointwise", y, pointwise, 1, Padding::kSame);
      x = layers::FusedBatchNorm(b_, "bn", y);
    }
    return x;
  }

  // Halves the spatial size of x along two shifted paths (NASNet).
  Tensor FactorizedReduction(const std::string& name, Tensor x, int64_t filters) {
    auto scope = b_.NameScope(name);
    Tensor r = Unary(b_, "Relu", "Relu", x);
    std::vector<Tensor> paths;
    for (int p = 0; p < 2; ++p) {
      auto path = b_.NameScope("path" + std::to_string(p + 1));
      Tensor in = r;
      if (p == 1) {
        const Shape s = b_.shape(r);
        in = Slice(b_, "shift", Pad(b_, "Pad", r, {s[0], s[1] + 1, s[2] + 1, s[3]}), s);
      }
      Tensor pooled = Pool(b_, "AvgPool", "AvgPool", in, 1, 1, 2, Padding::kValid);
      const int64_t half = p == 0 ? filters / 2 : filters - filters / 2;
      Tensor w = Decayed(b_.Variable("weights", {1, 1, b_.shape(r)[3], half}));
      paths.push_back(Conv2D(b_, "Conv2D", pooled, w, 1, Padding::kSame));
    }
    return layers::FusedBatchNorm(b_, "bn", Concat(b_, "concat", paths, 3));
  }

  Tensor ApplyOp(const std::string& name, CellOp op, Tensor x, int64_t filters, int stride) {
    switch (op) {
      case CellOp::kSep3: return SeparableTwice(name + "_sep3x3", x, filters, 3, stride);
      case CellOp::kSep5: return SeparableTwice(name + "_sep5x5", x, filters, 5, stride);
      case CellOp::kSep7: return SeparableTwice(name + "_sep7x7", x, filters, 7, stride);
      case CellOp::kAvg3:
      case CellOp::kMax3: {
        const bool avg = op == CellOp::kAvg3;
        Tensor y = Pool(b_, avg ? "AvgPool" : "MaxPool", name + (avg ? "_avg3x3" : "_max3x3"), x, 3, 3, stride,
                        Padding::kSame);
        if (b_.shape(y)[3] != filters) y = ReluConvBn(name + "_conv1x1", y, filters, 1, 1, 1);
        return y;
      }
      case CellOp::kNone:
        if (stride > 1) return FactorizedReduction(name + "_reduce", x, filters);
        return x;
      case CellOp::kConv1x7: {
        Tensor y = ReluConvBn(name + "_1x7", x, filters, 1, 7, stride);
        return ReluConvBn(name + "_7x1", y, filters, 7, 1, 1);
      }
    }
    return x;
  }

  // One cell over (prev_prev, prev), in its own name scope and stage.
  Tensor Cell(const std::string& name, const Genotype& genotype, Tensor prev_prev, Tensor prev, int64_t filters,
              int stride) {
    auto scope = b_.NameScope(name);
    auto stage = b_.StageScope(unit_++);
    // Bring both inputs to `filters` channels and prev's spatial size.
    if (b_.shape(prev_prev)[1] != b_.shape(prev)[1]) {
      prev_prev = FactorizedReduction("reduce_prev_layer", prev_prev, filters);
    } else if (b_.shape(prev_prev)[3] != filters) {
      prev_prev = ReluConvBn("prev_1x1", prev_prev, filters, 1, 1, 1);
    }
    std::vector<Tensor> hidden{prev_prev, ReluConvBn("beginning", prev, filters, 1, 1, 1)};
    for (size_t i = 0; i < genotype.ops.size(); i += 2) {
      const std::string node = "comb_iter_" + std::to_string(i / 2);
      Tensor sum[2];
      for (int side = 0; side < 2; ++side) {
        auto [index, op] = genotype.ops[i + side];
        sum[side] = ApplyOp(node + (side == 0 ? "/left" : "/right"), op, hidden[index], filters, index < 2 ? stride : 1);
      }
      hidden.push_back(Add(b_, node + "/combine", sum[0], sum[1]));
    }
    std::vector<Tensor> outs;
    for (int i : genotype.concat) outs.push_back(hidden[i]);
    return Concat(b_, "cell_output/concat", outs, 3);
  }

  int32_t NextUnit() { return unit_++; }
  int32_t units() const { return unit_; }

  // Weight decay (4e-5 on convolution weights, as the TPU implementation
  // trains it): a term of the loss next to the weights. The scale comes
  // before the L2Loss (op order: tf_ops.h).
  Tensor Decayed(Tensor weights) {
    auto scope = b_.NameScope("Regularizer");
    const Tensor scale = Const(b_, "scale", {});
    const Tensor l2 = L2Loss(b_, "L2Loss", weights);
    decay_terms_.push_back(Mul(b_, "l2_regularizer", l2, scale));
    return weights;
  }
  const std::vector<Tensor>& decay_terms() const { return decay_terms_; }

 private:
  B& b_;
  std::vector<Tensor> decay_terms_;
  int32_t unit_ = 0;
};

}  // namespace

Graph MakeAmoebaNet(const AmoebaNetConfig& config) {
  const int64_t N = config.batch, F = config.filters, C = config.classes;
  B b(config.name, Optimizer::kRmsProp);
  AmoebaBuilder net(b);

  std::vector<Tensor> input;
  {
    auto host = b.HostScope();
    input = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {},
                       {TensorSpec::Make({N, config.image, config.image, 3}), TensorSpec::Make({N}, "int64")}, 0});
  }

  auto scope = b.NameScope("amoeba_net");
  Tensor stem;
  {
    auto stage = b.StageScope(net.NextUnit());
    auto name = b.NameScope("conv0");
    // The ImageNet stem: 3x3 stride 2 with 32 x stem_multiplier (3) filters.
    Tensor w = net.Decayed(b.Variable("weights", {3, 3, 3, 96}));
    stem = layers::FusedBatchNorm(b, "conv0_bn", Conv2D(b, "Conv2D", input[0], w, 2, Padding::kValid));
  }
  // Two reduction stem cells with F/4 and F/2 filters.
  Tensor prev_prev = stem;
  Tensor prev = net.Cell("cell_stem_0", ReductionCell(), stem, stem, F / 4, 2);
  Tensor next = net.Cell("cell_stem_1", ReductionCell(), prev_prev, prev, F / 2, 2);
  prev_prev = prev;
  prev = next;

  int64_t filters = F;
  int cell = 0;
  for (int stack = 0; stack < 3; ++stack) {
    if (stack > 0) {
      filters *= 2;
      next = net.Cell("reduction_cell_" + std::to_string(stack - 1), ReductionCell(), prev_prev, prev, filters, 2);
      prev_prev = prev;
      prev = next;
    }
    for (int64_t i = 0; i < config.cells; ++i) {
      next = net.Cell("cell_" + std::to_string(cell++), NormalCell(), prev_prev, prev, filters, 1);
      prev_prev = prev;
      prev = next;
    }
  }

  Tensor loss;
  {
    auto stage = b.StageScope(net.NextUnit());
    auto name = b.NameScope("final_layer");
    Tensor pooled = Reduce(b, "Mean", "global_pool", Unary(b, "Relu", "Relu", prev), {1, 2}, false);
    Tensor logits = layers::Dense(b, "logits", Dropout(b, "dropout", pooled), C);
    Tensor one_hot = Plain(b, "one_hot", "OneHot", {input[1]}, {N, C}, double(N * C));
    Tensor smoothed = Plain(b, "label_smoothing", "Add", {one_hot}, {N, C}, double(N * C));
    Tensor xent = Reduce(b, "Mean", "Mean", SoftmaxCrossEntropy(b, "xent", logits, smoothed).loss, {0}, false);
    loss = AddN(b, "total_loss", {xent, AddN(b, "regularization_loss", net.decay_terms())});
  }
  b.Minimize(loss);
  return b.Finish(net.units());
}

}  // namespace devplace
