#include "models/registry.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "models/benchmark_models.h"
#include "models/synthetic.h"
#include "util/error.h"

namespace devplace {
namespace {

// Parameter bounds (docs/models.md). Each is far above the papers'
// configurations and low enough that a product of a few of them (a tensor's
// elements) cannot overflow int64; the builder rejects any single tensor
// above 1 TiB (models/checked.h).
constexpr int64_t kMaxSeed = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxBatch = 65536;
constexpr int64_t kMaxImageBatch = 4096;
constexpr int64_t kMaxHidden = 65536;
constexpr int64_t kMaxInner = 262144;
constexpr int64_t kMaxVocab = 1 << 20;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxRnnLayers = 64;
constexpr int64_t kMaxSequence = 4096;
constexpr int64_t kMaxTransformerLayers = 1024;
constexpr int64_t kMaxTransformerLength = 8192;
constexpr int64_t kMaxImage = 2048;
constexpr int64_t kMaxChannels = 4096;
// An unrolled RNN has about 71 ops per LSTM cell (forward and backward), so
// these keep RNNLM to about 600,000 ops and NMT to about 1.27 million (its
// encoder and decoder each have layers x length cells): enough for a
// real-shaped graph of a million ops (gnmt8 --length 800: 995,353 ops, 12 s
// and 1.6 GB to generate), under models/checked.h's 2,000,000.
constexpr int64_t kMaxRnnlmCells = 8192;  // layers x steps
constexpr int64_t kMaxNmtCells = 8192;    // layers x length, in each of encoder and decoder

struct ModelEntry {
  ModelInfo info;
  std::function<Graph(const ModelParams&)> make;
};

int64_t Param(const ModelParams& params, const char* name, int64_t fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

[[noreturn]] void Reject(const std::string& model, const std::string& problem) {
  throw Error("model '" + model + "': " + problem);
}

// Unrolled LSTM cells are what an RNN's op count grows with.
void RequireCells(const std::string& model, int64_t layers, const char* time_flag, int64_t time, int64_t max) {
  if (layers * time > max) {  // both at most a few thousand: no overflow
    Reject(model, "--layers x --" + std::string(time_flag) + " is " + std::to_string(layers * time) +
                      " unrolled cells, over the limit of " + std::to_string(max) + " (about " +
                      std::to_string(max * 71) + " ops)");
  }
}

ModelEntry Rnnlm(std::string name, std::string description, int64_t layers, int64_t hidden, int64_t batch) {
  return {{name,
           std::move(description),
           {{"layers", 1, kMaxRnnLayers},
            {"hidden", 1, kMaxHidden},
            {"steps", 1, kMaxSequence},
            {"batch", 1, kMaxBatch},
            {"vocab", 1, kMaxVocab}}},
          [=](const ModelParams& p) {
            RnnlmConfig c;
            c.name = name;
            c.layers = Param(p, "layers", layers);
            c.hidden = Param(p, "hidden", hidden);
            c.steps = Param(p, "steps", c.steps);
            c.batch = Param(p, "batch", batch);
            c.vocab = Param(p, "vocab", c.vocab);
            RequireCells(name, c.layers, "steps", c.steps, kMaxRnnlmCells);
            return MakeRnnlm(c);
          }};
}

ModelEntry Nmt(std::string name, std::string description, int64_t layers, int64_t hidden, int64_t batch) {
  return {{name,
           std::move(description),
           {{"layers", 1, kMaxRnnLayers},
            {"hidden", 1, kMaxHidden},
            {"length", 1, kMaxSequence},
            {"batch", 1, kMaxBatch},
            {"vocab", 1, kMaxVocab}}},
          [=](const ModelParams& p) {
            NmtConfig c;
            c.name = name;
            c.layers = Param(p, "layers", layers);
            c.hidden = Param(p, "hidden", hidden);
            c.length = Param(p, "length", c.length);
            c.batch = Param(p, "batch", batch);
            c.vocab = Param(p, "vocab", c.vocab);
            RequireCells(name, c.layers, "length", c.length, kMaxNmtCells);
            return MakeNmt(c);
          }};
}

ModelEntry TransformerXl(const std::string& name, int64_t layers) {
  return {{name,
           "GDP Transformer-XL, " + std::to_string(layers) +
               " layers (enwik8 base: d_model 512, 8 heads, length and memory 512, batch 22)",
           {{"layers", 1, kMaxTransformerLayers},
            {"d_model", 2, kMaxHidden},
            {"heads", 1, kMaxHeads},
            {"d_inner", 1, kMaxInner},
            {"length", 1, kMaxTransformerLength},
            {"memory", 1, kMaxTransformerLength},
            {"batch", 1, kMaxImageBatch}}},
          [=](const ModelParams& p) {
            TransformerXlConfig c;
            c.name = name;
            c.layers = Param(p, "layers", layers);
            c.d_model = Param(p, "d_model", c.d_model);
            c.heads = Param(p, "heads", c.heads);
            c.d_inner = Param(p, "d_inner", c.d_inner);
            c.length = Param(p, "length", c.length);
            c.memory = Param(p, "memory", c.memory);
            c.batch = Param(p, "batch", c.batch);
            if (c.d_model % c.heads != 0 || c.d_model % 2 != 0) {
              Reject(name, "--d_model must be even and a multiple of --heads");
            }
            c.d_head = c.d_model / c.heads;
            return MakeTransformerXl(c);
          }};
}

ModelEntry WaveNet(const std::string& name, int64_t stacks, int64_t layers) {
  return {{name,
           "GDP WaveNet, " + std::to_string(stacks) + " stacks, " + std::to_string(layers) +
               " layers (residual 32, skip 512, 256 levels, 100k samples, batch 1)",
           {{"stacks", 1, 1024},
            {"layers", 1, 4096},
            {"channels", 1, kMaxChannels},
            {"skip", 1, kMaxChannels},
            {"batch", 1, 1024},
            {"samples", 2, 1 << 24}}},
          [=](const ModelParams& p) {
            WaveNetConfig c;
            c.name = name;
            c.stacks = Param(p, "stacks", stacks);
            c.layers = Param(p, "layers", layers);
            c.residual_channels = c.dilation_channels = Param(p, "channels", c.residual_channels);
            c.skip_channels = Param(p, "skip", c.skip_channels);
            c.batch = Param(p, "batch", c.batch);
            c.samples = Param(p, "samples", c.samples);
            if (c.layers % c.stacks != 0) Reject(name, "--layers must be a multiple of --stacks");
            const int64_t per_stack = c.layers / c.stacks;
            if (per_stack > kMaxWaveNetLayersPerStack) {
              Reject(name, "--layers / --stacks is " + std::to_string(per_stack) + ", over the limit of " +
                               std::to_string(kMaxWaveNetLayersPerStack) + " layers per stack");
            }
            // At most 4096 layers of dilation at most 2^23: no overflow.
            int64_t receptive = 1;
            for (int64_t l = 0; l < c.layers; ++l) receptive += int64_t{1} << (l % per_stack);
            if (c.samples <= receptive) {
              Reject(name, "--samples must exceed the receptive field (" + std::to_string(receptive) + ")");
            }
            return MakeWaveNet(c);
          }};
}

SyntheticOptions SyntheticFrom(const ModelParams& p, int64_t ops, int64_t width) {
  SyntheticOptions o;
  o.num_ops = Param(p, "ops", ops);
  o.width = Param(p, "width", width);
  o.batch = Param(p, "batch", 64);
  o.hidden = Param(p, "hidden", o.hidden);
  o.seed = static_cast<uint64_t>(Param(p, "seed", 1));  // non-negative by its range
  return o;
}

const std::vector<ModelEntry>& Entries() {
  static const std::vector<ModelEntry> entries = {
      {{"tiny",
        "a 50-op synthetic training step (2 branches), for trying things out",
        {{"batch", 1, kMaxSyntheticBatch}, {"seed", 0, kMaxSeed}}},
       [](const ModelParams& p) {
         Graph g = MakeSyntheticGraph(SyntheticFrom(p, 50, 2));
         g.name = "tiny";
         return g;
       }},
      {{"synthetic",
        "a synthetic training step of layered branches (default 1,000 ops)",
        {{"ops", 1, kMaxSyntheticOps},
         {"width", 1, kMaxSyntheticWidth},
         {"batch", 1, kMaxSyntheticBatch},
         {"hidden", 1, kMaxSyntheticHidden},
         {"seed", 0, kMaxSeed}}},
       [](const ModelParams& p) { return MakeSyntheticGraph(SyntheticFrom(p, 1000, 4)); }},
      Rnnlm("rnnlm", "2017 paper RNNLM: 2-layer LSTM, hidden 2048, 40 steps, batch 64, Adam", 2, 2048, 64),
      Rnnlm("rnnlm_large", "2017 paper large RNNLM: 2-layer LSTM, hidden 4096, 40 steps, batch 256", 2, 4096, 256),
      Rnnlm("rnnlm4", "GDP 4-layer RNNLM: hidden 2048, 40 steps, batch 64", 4, 2048, 64),
      Nmt("nmt", "2017 paper NMT: 2+2-layer LSTM with attention, hidden 1024, length 40, batch 64, 32k vocab", 2, 1024, 64),
      Nmt("nmt_large", "2017 paper large NMT: 2+2-layer LSTM with attention, hidden 2048, batch 256", 2, 2048, 256),
      Nmt("gnmt2", "GDP GNMT, 2 encoder + 2 decoder layers (hidden 1024, batch 64)", 2, 1024, 64),
      Nmt("gnmt4", "GDP GNMT, 4 encoder + 4 decoder layers (hidden 1024, batch 64)", 4, 1024, 64),
      Nmt("gnmt8", "GDP GNMT, 8 encoder + 8 decoder layers (hidden 1024, batch 64)", 8, 1024, 64),
      {{"inception_v3",
        "2017 paper Inception-V3: batch 32, 299x299x3, RMSProp",
        {{"batch", 1, kMaxImageBatch}, {"image", kMinInceptionImage, kMaxImage}, {"classes", 1, kMaxVocab}}},
       [](const ModelParams& p) {
         InceptionConfig c;
         c.batch = Param(p, "batch", c.batch);
         c.image = Param(p, "image", c.image);
         c.classes = Param(p, "classes", c.classes);
         return MakeInceptionV3(c);
       }},
      TransformerXl("transformer_xl2", 2),
      TransformerXl("transformer_xl4", 4),
      TransformerXl("transformer_xl8", 8),
      WaveNet("wavenet2x18", 2, 18),
      WaveNet("wavenet4x36", 4, 36),
      {{"amoebanet",
        "AmoebaNet-A (N=6, F=190), ImageNet 224x224, batch 32, RMSProp (GDP)",
        {{"cells", 1, 256},
         {"filters", kMinAmoebaNetFilters, kMaxChannels},
         {"batch", 1, kMaxImageBatch},
         {"image", kMinAmoebaNetImage, kMaxImage},
         {"classes", 1, kMaxVocab}}},
       [](const ModelParams& p) {
         AmoebaNetConfig c;
         c.cells = Param(p, "cells", c.cells);
         c.filters = Param(p, "filters", c.filters);
         c.batch = Param(p, "batch", c.batch);
         c.image = Param(p, "image", c.image);
         c.classes = Param(p, "classes", c.classes);
         return MakeAmoebaNet(c);
       }},
      {{"bert_base",
        "BERT-base pre-training: 12 layers, hidden 768, 12 heads, length 128, batch 32, Adam (Mars)",
        {{"layers", 1, kMaxTransformerLayers},
         {"hidden", 1, kMaxHidden},
         {"heads", 1, kMaxHeads},
         {"intermediate", 1, kMaxInner},
         {"length", 1, kMaxBertLength},
         {"batch", 1, kMaxBatch},
         {"vocab", 1, kMaxVocab}}},
       [](const ModelParams& p) {
         BertConfig c;
         c.layers = Param(p, "layers", c.layers);
         c.hidden = Param(p, "hidden", c.hidden);
         c.heads = Param(p, "heads", c.heads);
         c.intermediate = Param(p, "intermediate", c.intermediate);
         c.length = Param(p, "length", c.length);
         c.batch = Param(p, "batch", c.batch);
         c.vocab = Param(p, "vocab", c.vocab);
         if (c.hidden % c.heads != 0) Reject("bert_base", "--hidden must be a multiple of --heads");
         return MakeBert(c);
       }},
  };
  return entries;
}

std::string ParamNames(const ModelInfo& info) {
  std::string names;
  for (const ModelParam& p : info.params) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

}  // namespace

std::vector<ModelInfo> ListModels() {
  std::vector<ModelInfo> out;
  for (const ModelEntry& e : Entries()) out.push_back(e.info);
  return out;
}

bool IsModelName(const std::string& name) {
  for (const ModelEntry& e : Entries()) {
    if (e.info.name == name) return true;
  }
  return false;
}

Graph MakeModel(const std::string& name, const ModelParams& params) {
  for (const ModelEntry& e : Entries()) {
    if (e.info.name != name) continue;
    for (const auto& [key, value] : params) {
      auto param = std::find_if(e.info.params.begin(), e.info.params.end(),
                                [&key = key](const ModelParam& p) { return p.name == key; });
      if (param == e.info.params.end()) {
        Reject(name, "no parameter '" + ForMessage(key) + "' (it takes: " + ParamNames(e.info) + ")");
      }
      if (value < param->min || value > param->max) {
        Reject(name, "--" + key + " " + std::to_string(value) + " is outside its range " + std::to_string(param->min) +
                         ".." + std::to_string(param->max));
      }
    }
    return e.make(params);
  }
  std::string names;
  for (const ModelEntry& e : Entries()) names += (names.empty() ? "" : ", ") + e.info.name;
  throw Error("unknown model '" + ForMessage(name) + "' (built-in models: " + names + ")");
}

}  // namespace devplace
