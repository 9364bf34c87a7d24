// BERT-base pre-training (Devlin et al. 2019) as google-research/bert's
// TensorFlow code builds it (modeling.py, run_pretraining.py): word,
// token-type and position embeddings, 12 Transformer encoder layers
// (multi-head self-attention, GELU feed-forward, post-layer-norm, dropout),
// the masked-LM head on the masked positions with the output weights tied
// to the word embedding, and the next-sentence head on the pooled first
// token. Trained with Adam (AdamWeightDecay). Mars places it.
//
// Expert placement: the usual layer-wise split, layer l on stage l, the
// embeddings with the first layer and the heads with the last.
#include <cmath>
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/checked.h"
#include "models/layers.h"
#include "models/training_graph_builder.h"
#include "util/error.h"

namespace devplace {

using namespace tf;

namespace {

// One op-making call per statement, in the model's op order (tf_ops.h).

// BERT's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor Gelu(B& b, Tensor x) {
  auto scope = b.NameScope("gelu");
  Tensor cube = Unary(b, "Pow", "Pow", x);
  Tensor inner = Add(b, "add", x, Mul(b, "mul", cube, Const(b, "mul/x", {})));
  Tensor t = Unary(b, "Tanh", "Tanh", Mul(b, "mul_1", inner, Const(b, "mul_1/x", {})));
  const Tensor half = Const(b, "mul_2/x", {});
  const Tensor one = Const(b, "add_1/x", {});
  const Tensor shifted = Add(b, "add_1", t, one);
  Tensor cdf = Mul(b, "mul_2", shifted, half);
  return Mul(b, "mul_3", x, cdf);
}

Tensor SelfAttention(B& b, Tensor x, Tensor mask_adder, const BertConfig& c) {
  auto scope = b.NameScope("attention");
  const int64_t N = c.batch, S = c.length, H = c.heads, D = c.hidden / c.heads;
  auto heads = [&](const std::string& name, Tensor rows) {
    return Transpose(b, name + "/transpose", Reshape(b, name + "/Reshape", rows, {N, S, H, D}), {0, 2, 1, 3});
  };
  Tensor q = heads("query", layers::Dense(b, "self/query", x, c.hidden));
  Tensor k = heads("key", layers::Dense(b, "self/key", x, c.hidden));
  Tensor v = heads("value", layers::Dense(b, "self/value", x, c.hidden));
  const Tensor scale = Const(b, "self/Mul/y", {});
  const Tensor qk = BatchMatMul(b, "self/MatMul", q, k, false, true);
  Tensor scores = Mul(b, "self/Mul", qk, scale);
  Tensor probs = Dropout(b, "self/dropout", Softmax(b, "self/Softmax", Add(b, "self/add", scores, mask_adder)));
  Tensor context = BatchMatMul(b, "self/MatMul_1", probs, v);  // [N, H, S, D]
  Tensor rows = Reshape(b, "self/Reshape_3", Transpose(b, "self/transpose_3", context, {0, 2, 1, 3}), {N * S, c.hidden});
  Tensor out = Dropout(b, "output/dropout", layers::Dense(b, "output/dense", rows, c.hidden));
  return layers::LayerNorm(b, "output/LayerNorm", Add(b, "output/add", out, x));
}

Tensor EncoderLayer(B& b, Tensor x, Tensor mask_adder, const BertConfig& c) {
  Tensor attended = SelfAttention(b, x, mask_adder, c);
  Tensor h = Gelu(b, layers::Dense(b, "intermediate/dense", attended, c.intermediate));
  Tensor out = Dropout(b, "output/dropout", layers::Dense(b, "output/dense", h, c.hidden));
  return layers::LayerNorm(b, "output/LayerNorm", Add(b, "output/add", out, attended));
}

}  // namespace

Graph MakeBert(const BertConfig& c) {
  Require(c.length >= 1 && c.length <= kMaxBertLength,
          "model '" + c.name + "': length must be 1.." + std::to_string(kMaxBertLength) + " (the position embeddings)");
  const int64_t N = c.batch, S = c.length, P = c.predictions, d = c.hidden;
  const int32_t last = models::ToInt32(c.layers - 1, "expert stage");
  B b(c.name, Optimizer::kAdam);

  // input_ids, input_mask, segment_ids [N, S]; masked_lm_positions,
  // masked_lm_ids [N * P]; next_sentence_labels [N].
  std::vector<Tensor> input;
  {
    auto host = b.HostScope();
    const TensorSpec seq = TensorSpec::Make({N * S}, "int32");
    const TensorSpec masked = TensorSpec::Make({N * P}, "int32");
    input = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {},
                       {seq, TensorSpec::Make({N, S}, "int32"), seq, masked, masked, TensorSpec::Make({N}, "int32")}, 0});
  }

  auto scope = b.NameScope("bert");
  Tensor word_embeddings, x, mask_adder;
  {
    auto stage = b.StageScope(0);
    auto name = b.NameScope("embeddings");
    word_embeddings = b.Variable("word_embeddings", {c.vocab, d});
    Tensor words = Gather(b, "GatherV2", word_embeddings, input[0]);
    Tensor types = Gather(b, "GatherV2_1", b.Variable("token_type_embeddings", {2, d}), input[2]);
    Tensor positions = Slice(b, "Slice", b.Variable("position_embeddings", {512, d}), {S, d});
    Tensor tokens = Reshape(b, "Reshape", Add(b, "add", words, types), {N, S, d});
    Tensor summed = Add(b, "add_1", tokens, Reshape(b, "Reshape_1", positions, {1, S, d}));
    x = Dropout(b, "dropout", layers::LayerNorm(b, "LayerNorm", Reshape(b, "Reshape_2", summed, {N * S, d})));
    // The attention mask as an additive bias, [N, 1, 1, S]: no gradient.
    Tensor mask = Plain(b, "Cast", "Cast", {input[1]}, {N, 1, 1, S}, double(N * S));
    mask_adder = Plain(b, "mul", "Mul", {Plain(b, "sub", "Sub", {mask}, {N, 1, 1, S}, double(N * S))}, {N, 1, 1, S},
                       double(N * S));
  }
  for (int64_t l = 0; l < c.layers; ++l) {
    auto stage = b.StageScope(models::ToInt32(l, "expert stage"));
    auto name = b.NameScope("encoder/layer_" + std::to_string(l));
    x = EncoderLayer(b, x, mask_adder, c);
  }

  Tensor loss;
  {
    auto stage = b.StageScope(last);
    Tensor mlm_loss, nsp_loss;
    {
      auto name = b.NameScope("cls/predictions");
      Tensor picked = Gather(b, "GatherV2", x, input[3]);  // [N * P, d]
      Tensor h = layers::LayerNorm(b, "transform/LayerNorm", Gelu(b, layers::Dense(b, "transform/dense", picked, d)));
      const Tensor output_bias = b.Variable("output_bias", {c.vocab});
      const Tensor product = MatMul(b, "MatMul", h, word_embeddings, false, true);
      Tensor logits = BiasAdd(b, "BiasAdd", product, output_bias);
      Tensor nll = SparseSoftmaxCrossEntropy(b, "xent", logits, input[4]).loss;
      mlm_loss = Reduce(b, "Mean", "Mean", nll, {0}, false);
    }
    {
      auto name = b.NameScope("cls/seq_relationship");
      Tensor first = Reshape(b, "Squeeze", Slice(b, "strided_slice", x, {N, d}), {N, d});
      Tensor pooled = Unary(b, "Tanh", "pooler/Tanh", layers::Dense(b, "pooler/dense", first, d));
      const Tensor output_bias = b.Variable("output_bias", {2});
      const Tensor output_weights = b.Variable("output_weights", {2, d});
      const Tensor product = MatMul(b, "MatMul", pooled, output_weights, false, true);
      Tensor logits = BiasAdd(b, "BiasAdd", product, output_bias);
      nsp_loss = Reduce(b, "Mean", "Mean", SparseSoftmaxCrossEntropy(b, "xent", logits, input[5]).loss, {0}, false);
    }
    loss = AddN(b, "total_loss", {mlm_loss, nsp_loss});
  }
  b.Minimize(loss);
  return b.Finish(models::ToInt32(c.layers, "expert stage"));
}

}  // namespace devplace
