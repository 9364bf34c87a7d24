#include "models/registry.h"

#include <algorithm>
#include <functional>

#include "models/benchmark_models.h"
#include "models/synthetic.h"
#include "util/error.h"

namespace devplace {
namespace {

struct ModelEntry {
  ModelInfo info;
  std::function<Graph(const ModelParams&)> make;
};

int64_t Param(const ModelParams& params, const char* name, int64_t fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

ModelEntry Rnnlm(std::string name, std::string description, int64_t layers, int64_t hidden, int64_t batch) {
  return {{name, std::move(description), {"layers", "hidden", "steps", "batch", "vocab"}},
          [=](const ModelParams& p) {
            RnnlmConfig c;
            c.name = name;
            c.layers = Param(p, "layers", layers);
            c.hidden = Param(p, "hidden", hidden);
            c.steps = Param(p, "steps", c.steps);
            c.batch = Param(p, "batch", batch);
            c.vocab = Param(p, "vocab", c.vocab);
            return MakeRnnlm(c);
          }};
}

ModelEntry Nmt(std::string name, std::string description, int64_t layers, int64_t hidden, int64_t batch) {
  return {{name, std::move(description), {"layers", "hidden", "length", "batch", "vocab"}},
          [=](const ModelParams& p) {
            NmtConfig c;
            c.name = name;
            c.layers = Param(p, "layers", layers);
            c.hidden = Param(p, "hidden", hidden);
            c.length = Param(p, "length", c.length);
            c.batch = Param(p, "batch", batch);
            c.vocab = Param(p, "vocab", c.vocab);
            return MakeNmt(c);
          }};
}

ModelEntry TransformerXl(const std::string& name, int64_t layers) {
  return {{name,
           "GDP Transformer-XL, " + std::to_string(layers) +
               " layers (enwik8 base: d_model 512, 8 heads, length and memory 512, batch 22)",
           {"layers", "d_model", "heads", "d_inner", "length", "memory", "batch"}},
          [=](const ModelParams& p) {
            TransformerXlConfig c;
            c.name = name;
            c.layers = Param(p, "layers", layers);
            c.d_model = Param(p, "d_model", c.d_model);
            c.heads = Param(p, "heads", c.heads);
            c.d_head = c.d_model / c.heads;
            c.d_inner = Param(p, "d_inner", c.d_inner);
            c.length = Param(p, "length", c.length);
            c.memory = Param(p, "memory", c.memory);
            c.batch = Param(p, "batch", c.batch);
            if (c.d_model % c.heads != 0 || c.d_model % 2 != 0) {
              throw Error("model '" + name + "': d_model must be even and a multiple of heads");
            }
            return MakeTransformerXl(c);
          }};
}

ModelEntry WaveNet(const std::string& name, int64_t stacks, int64_t layers) {
  return {{name,
           "GDP WaveNet, " + std::to_string(stacks) + " stacks, " + std::to_string(layers) +
               " layers (residual 32, skip 512, 256 levels, 100k samples, batch 1)",
           {"stacks", "layers", "channels", "skip", "batch", "samples"}},
          [=](const ModelParams& p) {
            WaveNetConfig c;
            c.name = name;
            c.stacks = Param(p, "stacks", stacks);
            c.layers = Param(p, "layers", layers);
            c.residual_channels = c.dilation_channels = Param(p, "channels", c.residual_channels);
            c.skip_channels = Param(p, "skip", c.skip_channels);
            c.batch = Param(p, "batch", c.batch);
            c.samples = Param(p, "samples", c.samples);
            if (c.layers % c.stacks != 0) throw Error("model '" + name + "': layers must be a multiple of stacks");
            int64_t receptive = 1;
            for (int64_t l = 0; l < c.layers; ++l) receptive += int64_t{1} << (l % (c.layers / c.stacks));
            if (c.samples <= receptive) {
              throw Error("model '" + name + "': samples must exceed the receptive field (" + std::to_string(receptive) + ")");
            }
            return MakeWaveNet(c);
          }};
}

const std::vector<ModelEntry>& Entries() {
  static const std::vector<ModelEntry> entries = {
      {{"tiny", "a 50-op synthetic training step (2 branches), for trying things out", {"batch", "seed"}},
       [](const ModelParams& p) {
         SyntheticOptions o;
         o.num_ops = 50;
         o.width = 2;
         o.batch = static_cast<int32_t>(Param(p, "batch", 64));
         o.seed = static_cast<uint64_t>(Param(p, "seed", 1));
         Graph g = MakeSyntheticGraph(o);
         g.name = "tiny";
         return g;
       }},
      {{"synthetic", "a synthetic training step of layered branches (default 1,000 ops)", {"ops", "width", "batch", "seed"}},
       [](const ModelParams& p) {
         SyntheticOptions o;
         o.num_ops = static_cast<int32_t>(Param(p, "ops", 1000));
         o.width = static_cast<int32_t>(Param(p, "width", 4));
         o.batch = static_cast<int32_t>(Param(p, "batch", 64));
         o.seed = static_cast<uint64_t>(Param(p, "seed", 1));
         return MakeSyntheticGraph(o);
       }},
      Rnnlm("rnnlm", "2017 paper RNNLM: 2-layer LSTM, hidden 2048, 40 steps, batch 64, Adam", 2, 2048, 64),
      Rnnlm("rnnlm_large", "2017 paper large RNNLM: 2-layer LSTM, hidden 4096, 40 steps, batch 256", 2, 4096, 256),
      Rnnlm("rnnlm4", "GDP 4-layer RNNLM: hidden 2048, 40 steps, batch 64", 4, 2048, 64),
      Nmt("nmt", "2017 paper NMT: 2+2-layer LSTM with attention, hidden 1024, length 40, batch 64, 32k vocab", 2, 1024, 64),
      Nmt("nmt_large", "2017 paper large NMT: 2+2-layer LSTM with attention, hidden 2048, batch 256", 2, 2048, 256),
      Nmt("gnmt2", "GDP GNMT, 2 encoder + 2 decoder layers (hidden 1024, batch 64)", 2, 1024, 64),
      Nmt("gnmt4", "GDP GNMT, 4 encoder + 4 decoder layers (hidden 1024, batch 64)", 4, 1024, 64),
      Nmt("gnmt8", "GDP GNMT, 8 encoder + 8 decoder layers (hidden 1024, batch 64)", 8, 1024, 64),
      {{"inception_v3", "2017 paper Inception-V3: batch 32, 299x299x3, RMSProp", {"batch", "image", "classes"}},
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
      {{"amoebanet", "AmoebaNet-A (N=6, F=190), ImageNet 224x224, batch 32, RMSProp (GDP)",
        {"cells", "filters", "batch", "image", "classes"}},
       [](const ModelParams& p) {
         AmoebaNetConfig c;
         c.cells = Param(p, "cells", c.cells);
         c.filters = Param(p, "filters", c.filters);
         c.batch = Param(p, "batch", c.batch);
         c.image = Param(p, "image", c.image);
         c.classes = Param(p, "classes", c.classes);
         return MakeAmoebaNet(c);
       }},
      {{"bert_base", "BERT-base pre-training: 12 layers, hidden 768, 12 heads, length 128, batch 32, Adam (Mars)",
        {"layers", "hidden", "heads", "intermediate", "length", "batch", "vocab"}},
       [](const ModelParams& p) {
         BertConfig c;
         c.layers = Param(p, "layers", c.layers);
         c.hidden = Param(p, "hidden", c.hidden);
         c.heads = Param(p, "heads", c.heads);
         c.intermediate = Param(p, "intermediate", c.intermediate);
         c.length = Param(p, "length", c.length);
         c.batch = Param(p, "batch", c.batch);
         c.vocab = Param(p, "vocab", c.vocab);
         if (c.hidden % c.heads != 0) throw Error("model 'bert_base': hidden must be a multiple of heads");
         return MakeBert(c);
       }},
  };
  return entries;
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
      if (std::find(e.info.params.begin(), e.info.params.end(), key) == e.info.params.end()) {
        std::string accepted;
        for (const auto& p : e.info.params) accepted += (accepted.empty() ? "" : ", ") + p;
        throw Error("model '" + name + "' has no parameter '" + key + "' (it takes: " + accepted + ")");
      }
      if (value <= 0 && key != "seed") throw Error("model '" + name + "': parameter '" + key + "' must be positive");
    }
    return e.make(params);
  }
  std::string names;
  for (const ModelEntry& e : Entries()) names += (names.empty() ? "" : ", ") + e.info.name;
  throw Error("unknown model '" + name + "' (built-in models: " + names + ")");
}

}  // namespace devplace
