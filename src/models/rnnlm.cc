// The RNN language model of the 2017 paper (§4.1) and GDP: an embedding
// lookup per step, `layers` LSTMs unrolled over the steps, and a softmax per
// step, as a statically unrolled TensorFlow 1.x graph trained with Adam and
// gradient clipping (Zaremba et al. 2014).
//
// Co-location groups are the paper's: each LSTM cell, each embedding lookup
// and each softmax step. Expert placement: layer l on stage l, the
// embedding beside the first layer, the softmax beside the last.
#include <string>
#include <vector>

#include "models/benchmark_models.h"
#include "models/checked.h"
#include "models/layers.h"
#include "models/training_graph_builder.h"

namespace devplace {

using namespace tf;

Graph MakeRnnlm(const RnnlmConfig& config) {
  const int64_t L = config.layers, H = config.hidden, T = config.steps, N = config.batch, V = config.vocab;
  const int32_t last = models::ToInt32(L - 1, "expert stage");
  B b(config.name, Optimizer::kAdam);

  std::vector<Tensor> batch;
  {
    auto host = b.HostScope();
    batch = b.EmitAll({"input/IteratorGetNext", "IteratorGetNext", {}, {TensorSpec::Make({N, T}, "int32"),
                                                                           TensorSpec::Make({N, T}, "int32")}, 0});
  }
  const Tensor ids = batch[0], targets = batch[1];

  Tensor embedding, softmax_w, softmax_b;
  std::vector<Tensor> kernels, biases;
  {
    auto scope = b.NameScope("rnnlm");
    {
      auto stage = b.StageScope(0);
      embedding = b.Variable("embedding", {V, H});
    }
    for (int64_t l = 0; l < L; ++l) {
      auto stage = b.StageScope(models::ToInt32(l, "expert stage"));
      auto name = b.NameScope("layer_" + std::to_string(l));
      kernels.push_back(b.Variable("kernel", {2 * H, 4 * H}));
      biases.push_back(b.Variable("bias", {4 * H}));
    }
    auto stage = b.StageScope(last);
    softmax_w = b.Variable("softmax_w", {H, V});
    softmax_b = b.Variable("softmax_b", {V});
  }

  std::vector<layers::LstmState> state(L);
  std::vector<Tensor> losses;
  for (int64_t t = 0; t < T; ++t) {
    const std::string step = std::to_string(t);
    Tensor x = layers::EmbeddingStep(b, "rnnlm/embedding/step_" + step, 0, embedding, ids);
    x = layers::StackedLstmStep(b, "rnnlm/", t, x, state, kernels, biases);
    {
      const std::string group = "rnnlm/softmax/step_" + step;
      auto g = b.GroupScope(group, last);
      auto name = b.NameScope(group);
      Tensor logits = BiasAdd(b, "BiasAdd", MatMul(b, "MatMul", x, softmax_w), softmax_b);
      losses.push_back(SparseSoftmaxCrossEntropy(b, "xent", logits, layers::StepIds(b, "strided_slice", targets)).loss);
    }
  }

  Tensor loss;
  {
    // sequence_loss: the per-step losses summed, averaged over the batch.
    auto g = b.GroupScope("rnnlm/loss", last);
    auto name = b.NameScope("rnnlm/loss");
    Tensor total = Reduce(b, "Sum", "Sum", AddN(b, "AddN", losses), {0}, false);
    loss = Binary(b, "RealDiv", "truediv", total, Const(b, "batch_size", {}));
  }
  b.Minimize(loss, {.clip_by_global_norm = true});
  return b.Finish(models::ToInt32(L, "expert stage"));
}

}  // namespace devplace
