// The placement papers' benchmark models as full training-step graphs:
// forward, backward and optimizer update, at TensorFlow's op granularity,
// each with its expert placement (Op::expert_stage). One family per source
// file; docs/models.md lists the configurations and where they come from.
#pragma once

#include <cstdint>
#include <string>

#include "graph/graph.h"

namespace devplace {

// RNN language model: stacked LSTMs unrolled over `steps`, per-step
// embedding lookups and softmaxes (2017 §4.1; GDP's 2- and 4-layer RNNLM).
struct RnnlmConfig {
  std::string name = "rnnlm";
  int64_t layers = 2;
  int64_t hidden = 2048;
  int64_t steps = 40;
  int64_t batch = 64;
  int64_t vocab = 10000;
};
Graph MakeRnnlm(const RnnlmConfig& config);

// Attentional NMT: LSTM encoder and decoder, additive attention at every
// decoder step, per-step softmax (2017 §4.1; GDP's GNMT).
struct NmtConfig {
  std::string name = "nmt";
  int64_t layers = 2;  // in the encoder and in the decoder
  int64_t hidden = 1024;
  int64_t length = 40;  // source and target sentence length
  int64_t batch = 64;
  int64_t vocab = 32000;  // shared word pieces
};
Graph MakeNmt(const NmtConfig& config);

// Inception-V3 (Szegedy et al. 2016) as TF-slim builds it, with the
// auxiliary head, trained with RMSProp.
struct InceptionConfig {
  std::string name = "inception_v3";
  int64_t batch = 32;
  int64_t image = 299;
  int64_t classes = 1001;
};
// The smallest image whose Mixed_6e map still fits the auxiliary head's 5x5
// VALID pooling (299 gives 17x17 there).
inline constexpr int64_t kMinInceptionImage = 107;
Graph MakeInceptionV3(const InceptionConfig& config);

// Transformer-XL (Dai et al. 2019), its enwik8 base configuration with
// fewer layers as GDP uses it.
struct TransformerXlConfig {
  std::string name = "transformer_xl";
  int64_t layers = 2;
  int64_t d_model = 512;
  int64_t heads = 8;
  int64_t d_head = 64;
  int64_t d_inner = 2048;
  int64_t length = 512;      // tgt_len
  int64_t memory = 512;      // mem_len
  int64_t batch = 22;
  int64_t vocab = 204;       // enwik8 bytes
};
Graph MakeTransformerXl(const TransformerXlConfig& config);

// WaveNet (van den Oord et al. 2016) as the common TensorFlow
// implementation builds it: stacks of dilated causal convolutions with gated
// activations, residual and skip connections.
struct WaveNetConfig {
  std::string name = "wavenet";
  int64_t stacks = 2;
  int64_t layers = 18;  // in all stacks together
  int64_t residual_channels = 32;
  int64_t dilation_channels = 32;
  int64_t skip_channels = 512;
  int64_t quantization = 256;
  int64_t batch = 1;
  int64_t samples = 100000;
};
// The deepest stack: dilations up to 2^23 samples.
inline constexpr int64_t kMaxWaveNetLayersPerStack = 24;
Graph MakeWaveNet(const WaveNetConfig& config);

// AmoebaNet-A (Real et al. 2019) for ImageNet.
struct AmoebaNetConfig {
  std::string name = "amoebanet";
  int64_t cells = 6;     // normal cells per stack (N)
  int64_t filters = 190; // F
  int64_t batch = 32;
  int64_t image = 224;
  int64_t classes = 1001;
};
// The smallest image the stem's 3x3 VALID convolution takes (the later
// reductions pad), and the fewest filters whose quarter (the first stem
// cell's) is still a channel.
inline constexpr int64_t kMinAmoebaNetImage = 3;
inline constexpr int64_t kMinAmoebaNetFilters = 4;
Graph MakeAmoebaNet(const AmoebaNetConfig& config);

// BERT-base pre-training (Devlin et al. 2019): masked LM and next-sentence
// heads, Adam with weight decay.
struct BertConfig {
  std::string name = "bert_base";
  int64_t layers = 12;
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t intermediate = 3072;
  int64_t length = 128;
  int64_t batch = 32;
  int64_t vocab = 30522;
  int64_t predictions = 20;  // masked positions per sequence
};
// Position embeddings exist for this many positions.
inline constexpr int64_t kMaxBertLength = 512;
Graph MakeBert(const BertConfig& config);

}  // namespace devplace
