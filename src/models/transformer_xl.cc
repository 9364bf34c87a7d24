// Transformer-XL (Dai et al. 2019) as its TensorFlow code builds a training
// step (tf/model.py): relative multi-head attention over the segment and
// the cached memory of the previous segment, position-wise feed-forward
// layers, post-layer-norm, a softmax tied to the input embedding. GDP places
// its 2-, 4- and 8-layer versions. Trained with Adam.
//
// Layout is time-major, [length, batch, d_model], flattened to rows of
// d_model for the dense layers (what tf.layers.dense does to 3-D inputs).
// Expert placement: layer l on stage l, the embedding with the first layer,
// the softmax with the last.
#include <cmath>
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/checked.h"
#include "models/layers.h"
#include "models/training_graph_builder.h"

namespace devplace {

using namespace tf;

namespace {

// One op-making call per statement, in the model's op order (tf_ops.h).

struct XlShapes {
  int64_t q, m, k, batch, d, heads, d_head, inner;
};

// Per-head layout [batch, heads, time, d_head] from time-major rows.
Tensor Heads(B& b, const std::string& name, Tensor rows, int64_t time, const XlShapes& s) {
  Tensor split = Reshape(b, name + "/Reshape", rows, {time, s.batch, s.heads, s.d_head});
  return Transpose(b, name + "/transpose", split, {1, 2, 0, 3});
}

Tensor RelativeAttention(B& b, Tensor w, Tensor memory, Tensor r, Tensor r_w_bias, Tensor r_r_bias, const XlShapes& s) {
  auto scope = b.NameScope("rel_attn");
  const int64_t hd = s.heads * s.d_head;
  Tensor cat = Concat(b, "concat", {memory, w}, 0);  // [k*batch, d]
  Tensor qkv = MatMul(b, "qkv/MatMul", cat, b.Variable("qkv/kernel", {s.d, 3 * hd}));
  Tensor r_head_k = MatMul(b, "r/MatMul", r, b.Variable("r/kernel", {s.d, hd}));
  std::vector<Tensor> parts = Split(b, "split", qkv, 1, 3);
  Tensor q = Slice(b, "strided_slice", parts[0], {s.q * s.batch, hd});  // the segment's own rows

  // AC: content attention; BD: position attention, then the relative shift.
  Tensor rw_q = Heads(b, "rw_head_q", Add(b, "add", q, r_w_bias), s.q, s);
  Tensor k = Heads(b, "w_head_k", parts[1], s.k, s);
  Tensor v = Heads(b, "w_head_v", parts[2], s.k, s);
  Tensor ac = BatchMatMul(b, "AC", rw_q, k, false, true);  // [batch, heads, q, k]
  Tensor rr_q = Reshape(b, "rr_head_q/Reshape_1",
                        Transpose(b, "rr_head_q/transpose",
                                  Reshape(b, "rr_head_q/Reshape", Add(b, "add_1", q, r_r_bias), {s.q, s.batch, s.heads, s.d_head}),
                                  {2, 1, 0, 3}),
                        {s.heads, s.batch * s.q, s.d_head});
  Tensor r_k = Transpose(b, "r_head_k/transpose", Reshape(b, "r_head_k/Reshape", r_head_k, {s.k, s.heads, s.d_head}), {1, 0, 2});
  Tensor bd = BatchMatMul(b, "BD", rr_q, r_k, false, true);  // [heads, batch*q, k]
  bd = Transpose(b, "BD/transpose", Reshape(b, "BD/Reshape", bd, {s.heads, s.batch, s.q, s.k}), {1, 0, 2, 3});
  Tensor padded = Pad(b, "rel_shift/Pad", bd, {s.batch, s.heads, s.q, s.k + 1});
  bd = Slice(b, "rel_shift/Slice", Reshape(b, "rel_shift/Reshape", padded, {s.batch, s.heads, s.q * (s.k + 1)}),
             {s.batch, s.heads, s.q * s.k});
  bd = Reshape(b, "rel_shift/Reshape_1", bd, {s.batch, s.heads, s.q, s.k});

  const Tensor scale = Const(b, "scale", {});
  const Tensor ac_bd = Add(b, "add_2", ac, bd);
  Tensor score = Mul(b, "mul", ac_bd, scale);
  // Causal mask over the segment and its memory: score * (1 - m) - 1e30 * m.
  Tensor keep = Const(b, "attn_mask/keep", {s.q, s.k});
  Tensor big = Const(b, "attn_mask/big", {s.q, s.k});
  Tensor masked = Sub(b, "sub", Mul(b, "mul_1", score, keep), big);
  Tensor prob = Softmax(b, "Softmax", masked);
  Tensor vec = BatchMatMul(b, "attn_vec", prob, v);  // [batch, heads, q, d_head]
  Tensor rows = Reshape(b, "attn_vec/Reshape", Transpose(b, "attn_vec/transpose", vec, {2, 0, 1, 3}), {s.q * s.batch, hd});
  Tensor out = Dropout(b, "dropout", MatMul(b, "o/MatMul", rows, b.Variable("o/kernel", {hd, s.d})));
  return layers::LayerNorm(b, "LayerNorm", Add(b, "add_3", out, w));
}

Tensor PositionwiseFf(B& b, Tensor x, const XlShapes& s) {
  auto scope = b.NameScope("ff");
  Tensor h = Dropout(b, "dropout", Unary(b, "Relu", "Relu", layers::Dense(b, "layer_1", x, s.inner)));
  Tensor y = Dropout(b, "dropout_1", layers::Dense(b, "layer_2", h, s.d));
  return layers::LayerNorm(b, "LayerNorm", Add(b, "add", y, x));
}

}  // namespace

Graph MakeTransformerXl(const TransformerXlConfig& config) {
  const XlShapes s{config.length, config.memory, config.length + config.memory, config.batch, config.d_model,
                   config.heads, config.d_head, config.d_inner};
  const int64_t L = config.layers, rows = s.q * s.batch;
  B b(config.name, Optimizer::kAdam);

  std::vector<Tensor> batch;
  {
    auto host = b.HostScope();
    const TensorSpec ids = TensorSpec::Make({rows}, "int32");
    batch = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {}, {ids, ids}, 0});
  }

  auto scope = b.NameScope("transformer");
  Tensor embedding, r, r_w_bias, r_r_bias, h;
  {
    auto stage = b.StageScope(0);
    embedding = b.Variable("adaptive_embed/lookup_table", {config.vocab, s.d});
    r_w_bias = b.Variable("r_w_bias", {s.heads * s.d_head});
    r_r_bias = b.Variable("r_r_bias", {s.heads * s.d_head});
    const Tensor scale = Const(b, "adaptive_embed/scale", {});
    const Tensor looked_up = Gather(b, "adaptive_embed/embedding_lookup", embedding, batch[0]);
    Tensor scaled = Mul(b, "adaptive_embed/mul", looked_up, scale);
    h = Dropout(b, "dropout", scaled);
    // Sinusoid embeddings of the relative positions k-1 .. 0.
    Tensor positions = Plain(b, "pos_emb/range", "Range", {}, {s.k}, 0);
    Tensor angles = Plain(b, "pos_emb/einsum", "Mul", {positions}, {s.k, s.d / 2}, double(s.k * s.d / 2));
    Tensor sin = Plain(b, "pos_emb/Sin", "Sin", {angles}, {s.k, s.d / 2}, 4.0 * s.k * s.d / 2);
    Tensor cos = Plain(b, "pos_emb/Cos", "Cos", {angles}, {s.k, s.d / 2}, 4.0 * s.k * s.d / 2);
    r = Dropout(b, "dropout_1", Plain(b, "pos_emb/concat", "ConcatV2", {sin, cos}, {s.k, s.d}));
  }
  for (int64_t l = 0; l < L; ++l) {
    auto stage = b.StageScope(models::ToInt32(l, "expert stage"));
    auto name = b.NameScope("layer_" + std::to_string(l));
    // The previous segment's hidden states, cached in the step's state and
    // replaced by this segment's at its end.
    Tensor memory = b.Variable("mems", {s.m * s.batch, s.d}, {.trainable = false});
    {
      auto update = b.UpdateScope();
      auto beside = b.ColocateWith(memory);
      Tensor latest = Plain(b, "new_mems/strided_slice", "StridedSlice", {h}, {s.m * s.batch, s.d});
      b.Emit({"new_mems/Assign", "Assign", {latest}, {}, 0});
    }
    h = RelativeAttention(b, h, memory, r, r_w_bias, r_r_bias, s);
    h = PositionwiseFf(b, h, s);
  }
  Tensor loss;
  {
    auto stage = b.StageScope(models::ToInt32(L - 1, "expert stage"));
    auto name = b.NameScope("adaptive_softmax");
    Tensor out = Dropout(b, "dropout", h);
    // The softmax's weights are the embedding's (tie_weight).
    const Tensor bias = b.Variable("bias", {config.vocab});
    const Tensor product = MatMul(b, "MatMul", out, embedding, false, true);
    Tensor logits = BiasAdd(b, "BiasAdd", product, bias);
    Tensor nll = SparseSoftmaxCrossEntropy(b, "xent", logits, batch[1]).loss;
    loss = Reduce(b, "Mean", "Mean", nll, {0}, false);
  }
  b.Minimize(loss);
  return b.Finish(models::ToInt32(L, "expert stage"));
}

}  // namespace devplace
