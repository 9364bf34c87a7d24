// Attentional neural machine translation (2017 §4.1, after Bahdanau et al.
// 2015 and Wu et al. 2016; GDP's GNMT): an LSTM encoder and an LSTM decoder
// unrolled over the sentence, additive attention over the encoder's top
// layer at every decoder step, the attention vector fed to the next step's
// input (input feeding), and a softmax over the word pieces per step. A
// statically unrolled TensorFlow 1.x graph trained with Adam and gradient
// clipping.
//
// Co-location groups are the paper's: each LSTM cell, each embedding
// lookup, each attention step and each softmax step. Expert placement
// (2017 §4.2, GNMT): each LSTM layer its own stage (encoder layers 0..L-1,
// decoder layers L..2L-1), each embedding beside its first layer,
// attention and softmax beside the last decoder layer.
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/checked.h"
#include "models/layers.h"
#include "models/training_graph_builder.h"

namespace devplace {

using namespace tf;

namespace {

struct Attention {
  Tensor memory;  // [N, T, H], the encoder's top layer
  Tensor keys;    // [N, T, A], memory projected once
  Tensor query_kernel, score_v, output_kernel;
};

// Additive attention for one decoder step, and the attention vector
// tanh(W_o [h; context]).
Tensor AttentionStep(B& b, const Attention& a, Tensor h) {
  const Shape& keys = b.shape(a.keys);
  const int64_t N = keys[0], T = keys[1], A = keys[2];
  Tensor query = Reshape(b, "Reshape", MatMul(b, "query_layer/MatMul", h, a.query_kernel), {N, 1, A});
  Tensor hidden = Unary(b, "Tanh", "Tanh", Add(b, "add", a.keys, query));
  Tensor score = Reduce(b, "Sum", "Sum", Mul(b, "mul", hidden, a.score_v), {2}, false);
  Tensor alignments = Reshape(b, "Reshape_1", Softmax(b, "Softmax", score), {N, T, 1});
  Tensor context = Reduce(b, "Sum", "Sum_1", Mul(b, "mul_1", alignments, a.memory), {1}, false);
  Tensor joined = Concat(b, "concat", {h, context}, 1);
  return Unary(b, "Tanh", "Tanh_1", MatMul(b, "attention_layer/MatMul", joined, a.output_kernel));
}

}  // namespace

Graph MakeNmt(const NmtConfig& config) {
  const int64_t L = config.layers, H = config.hidden, T = config.length, N = config.batch, V = config.vocab;
  const int32_t last = models::ToInt32(2 * L - 1, "expert stage");
  const int32_t decoder_first = models::ToInt32(L, "expert stage");
  B b(config.name, Optimizer::kAdam);

  std::vector<Tensor> batch;
  {
    auto host = b.HostScope();
    const TensorSpec ids = TensorSpec::Make({N, T}, "int32");
    batch = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {}, {ids, ids, ids}, 0});
  }
  const Tensor source = batch[0], target_in = batch[1], target_out = batch[2];

  Tensor encoder_embedding, decoder_embedding, softmax_w, softmax_b;
  std::vector<Tensor> encoder_kernels, encoder_biases, decoder_kernels, decoder_biases;
  Attention attention;
  Tensor memory_kernel;
  {
    auto scope = b.NameScope("nmt");
    {
      auto stage = b.StageScope(0);
      encoder_embedding = b.Variable("encoder/embedding", {V, H});
    }
    for (int64_t l = 0; l < L; ++l) {
      auto stage = b.StageScope(models::ToInt32(l, "expert stage"));
      auto name = b.NameScope("encoder/layer_" + std::to_string(l));
      encoder_kernels.push_back(b.Variable("kernel", {2 * H, 4 * H}));
      encoder_biases.push_back(b.Variable("bias", {4 * H}));
    }
    {
      auto stage = b.StageScope(decoder_first);
      decoder_embedding = b.Variable("decoder/embedding", {V, H});
    }
    for (int64_t l = 0; l < L; ++l) {
      auto stage = b.StageScope(models::ToInt32(L + l, "expert stage"));
      auto name = b.NameScope("decoder/layer_" + std::to_string(l));
      // Layer 0 reads the word and the previous attention vector.
      decoder_kernels.push_back(b.Variable("kernel", {(l == 0 ? 3 : 2) * H, 4 * H}));
      decoder_biases.push_back(b.Variable("bias", {4 * H}));
    }
    auto stage = b.StageScope(last);
    auto name = b.NameScope("attention");
    attention.query_kernel = b.Variable("query_layer/kernel", {H, H});
    attention.score_v = b.Variable("attention_v", {H});
    attention.output_kernel = b.Variable("attention_layer/kernel", {2 * H, H});
    memory_kernel = b.Variable("memory_layer/kernel", {H, H});
    softmax_w = b.Variable("softmax_w", {H, V});
    softmax_b = b.Variable("softmax_b", {V});
  }

  // Encoder.
  std::vector<layers::LstmState> state(L);
  std::vector<Tensor> top;
  for (int64_t t = 0; t < T; ++t) {
    const std::string step = std::to_string(t);
    Tensor x = layers::EmbeddingStep(b, "nmt/encoder/embedding/step_" + step, 0, encoder_embedding, source);
    top.push_back(layers::StackedLstmStep(b, "nmt/encoder/", t, x, state, encoder_kernels, encoder_biases));
  }
  {
    // The attention memory: the top layer's outputs, and their keys.
    const std::string group = "nmt/attention/memory";
    auto g = b.GroupScope(group, last);
    auto name = b.NameScope(group);
    attention.memory = Pack(b, "stack", top, 1);
    Tensor flat = Reshape(b, "Reshape", attention.memory, {N * T, H});
    attention.keys = Reshape(b, "Reshape_1", MatMul(b, "memory_layer/MatMul", flat, memory_kernel), {N, T, H});
  }

  // Decoder: starts from the encoder's final state, as in Sutskever et al.
  Tensor feed;  // the previous step's attention vector
  std::vector<Tensor> losses;
  for (int64_t t = 0; t < T; ++t) {
    const std::string step = std::to_string(t);
    Tensor x = layers::EmbeddingStep(b, "nmt/decoder/embedding/step_" + step, decoder_first, decoder_embedding, target_in);
    for (int64_t l = 0; l < L; ++l) {
      const std::string group = "nmt/decoder/layer_" + std::to_string(l) + "/cell_" + step;
      auto g = b.GroupScope(group, models::ToInt32(L + l, "expert stage"));
      auto name = b.NameScope(group);
      if (l == 0) {
        if (t == 0) feed = Const(b, "initial_attention", {N, H});
        x = Concat(b, "input_feeding", {x, feed}, 1);
      }
      state[l] = layers::LstmCell(b, "lstm_cell", x, state[l], decoder_kernels[l], decoder_biases[l]);
      x = state[l].h;
    }
    {
      const std::string group = "nmt/attention/step_" + step;
      auto g = b.GroupScope(group, last);
      auto name = b.NameScope(group);
      feed = AttentionStep(b, attention, x);
    }
    {
      const std::string group = "nmt/softmax/step_" + step;
      auto g = b.GroupScope(group, last);
      auto name = b.NameScope(group);
      Tensor logits = BiasAdd(b, "BiasAdd", MatMul(b, "MatMul", feed, softmax_w), softmax_b);
      losses.push_back(
          SparseSoftmaxCrossEntropy(b, "xent", logits, layers::StepIds(b, "strided_slice", target_out)).loss);
    }
  }

  Tensor loss;
  {
    auto g = b.GroupScope("nmt/loss", last);
    auto name = b.NameScope("nmt/loss");
    Tensor total = Reduce(b, "Sum", "Sum", AddN(b, "AddN", losses), {0}, false);
    loss = Binary(b, "RealDiv", "truediv", total, Const(b, "batch_size", {}));
  }
  b.Minimize(loss, {.clip_by_global_norm = true});
  return b.Finish(models::ToInt32(2 * L, "expert stage"));
}

}  // namespace devplace
