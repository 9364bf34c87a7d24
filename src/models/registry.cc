#include "models/registry.h"

#include <algorithm>
#include <functional>

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
