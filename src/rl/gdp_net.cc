#include "rl/gdp_net.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

#include "rl/checkpoint_facts.h"
#include "rl/checkpoint_file.h"
#include "rl/loaded_parameters.h"
#include "rl/run_files.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

constexpr std::string_view kPolicyHeader = "DEVPLACE-GDP-POLICY 1\n";

}  // namespace

std::vector<std::string> GdpVocabulary(const std::vector<const Graph*>& graphs) {
  std::map<std::string, int64_t> count;
  for (const Graph* graph : graphs) {
    for (const Op& op : graph->ops()) ++count[op.type];
  }
  std::vector<std::pair<std::string, int64_t>> types(count.begin(), count.end());
  std::stable_sort(types.begin(), types.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> vocabulary;
  for (const auto& [name, n] : types) {
    if (static_cast<int>(vocabulary.size()) == OpFeatures::kMaxTypes - 1) break;
    if (name != "other") vocabulary.push_back(name);
  }
  vocabulary.push_back("other");
  return vocabulary;
}

GdpInputs BuildGdpInputs(const OpFeatures& f, const Graph& graph, const Cluster& cluster,
                         const std::vector<std::string>& vocabulary) {
  const int64_t U = f.num_units, D = cluster.num_devices();
  std::unordered_map<std::string, int64_t> index;
  for (size_t t = 0; t < vocabulary.size(); ++t) index.emplace(vocabulary[t], static_cast<int64_t>(t));
  const int64_t other = static_cast<int64_t>(vocabulary.size()) - 1;
  std::vector<int64_t> type(U);
  std::vector<float> numeric(U * kGdpNumericFeatures, 0.0f);
  std::vector<int64_t> allowed(U * D, 0);
  for (int64_t u = 0; u < U; ++u) {
    auto it = index.find(f.type_names[f.unit_type[u]]);
    type[u] = it == index.end() ? other : it->second;
    float* row = &numeric[u * kGdpNumericFeatures];
    std::copy_n(&f.shape_features[u * OpFeatures::kShapeFeatures], OpFeatures::kShapeFeatures, row);
    double flops = 0, persistent = 0;
    for (int32_t i = f.unit_op_offsets[u]; i < f.unit_op_offsets[u + 1]; ++i) {
      flops += graph.op(f.unit_ops[i]).flops;
      persistent += static_cast<double>(graph.op(f.unit_ops[i]).persistent_bytes);
    }
    float* extra = row + OpFeatures::kShapeFeatures;
    extra[0] = f.unit_position[u];
    // log1p / 30: a teraflop or a terabyte is about 1.
    extra[1] = static_cast<float>(std::log1p(flops) / 30);
    extra[2] = static_cast<float>(std::log1p(static_cast<double>(f.unit_output_bytes[u])) / 30);
    extra[3] = static_cast<float>(std::log1p(persistent) / 30);
    for (int k = 0; k < kNumDeviceKinds; ++k) extra[4 + k] = (f.unit_kinds[u] >> k) & 1 ? 1.0f : 0.0f;
    for (int64_t d = 0; d < D; ++d) allowed[u * D + d] = (f.unit_kinds[u] & MaskOf(cluster.devices[d].kind)) != 0;
  }
  GdpInputs in;
  in.type = torch::tensor(type, torch::kInt64);
  in.numeric = torch::tensor(numeric, torch::kFloat32).view({U, kGdpNumericFeatures});
  in.allowed = torch::tensor(allowed, torch::kInt64).view({U, D}).to(torch::kBool);
  in.src = torch::tensor(std::vector<int64_t>(f.edge_src.begin(), f.edge_src.end()), torch::kInt64);
  in.dst = torch::tensor(std::vector<int64_t>(f.edge_dst.begin(), f.edge_dst.end()), torch::kInt64);
  return in;
}

GdpNetImpl::GdpNetImpl(const GdpArchitecture& architecture, double start_bias) : architecture_(architecture) {
  const int64_t types = std::max<int64_t>(1, static_cast<int64_t>(architecture.vocabulary.size()));
  type_embedding_ = register_module("type_embedding", torch::nn::Embedding(types, kGdpTypeEmbedding));
  sage_ = register_module("sage", GraphSage(kGdpTypeEmbedding + kGdpNumericFeatures, architecture.hidden, architecture.sage_layers));
  SegmentPlacerOptions placer;
  placer.hidden = architecture.hidden;
  placer.heads = architecture.heads;
  placer.layers = architecture.placer_layers;
  placer.segment = architecture.segment;
  placer.devices = architecture.devices;
  placer.attention = architecture.attention;
  placer.superposition = architecture.superposition;
  placer_ = register_module("placer", SegmentPlacer(placer));
  start_bias_ = register_parameter("start_bias", torch::full({1}, start_bias));
}

torch::Tensor GdpNetImpl::LogProbs(const GdpInputs& in, const torch::Tensor& start, double tanh_constant, double temperature) {
  torch::Tensor x = torch::cat({type_embedding_(in.type), in.numeric}, 1);
  torch::Tensor logits = placer_(sage_(x, in.src, in.dst));
  logits = tanh_constant * torch::tanh(logits / temperature) + start_bias_ * start;
  return torch::log_softmax(logits.masked_fill(in.allowed.logical_not(), -1e4), 1);
}

void GdpNetImpl::set_start_bias(double value) {
  torch::NoGradGuard no_grad;
  start_bias_.fill_(value);
}

void SaveGdpPolicyFile(const std::string& path, GdpNet& net, const GdpPolicyFileFacts& facts) {
  const GdpArchitecture& a = net->architecture();
  CheckpointParts parts;
  parts.facts = {{"architecture",
                  {{"hidden", a.hidden},
                   {"sage_layers", a.sage_layers},
                   {"placer_layers", a.placer_layers},
                   {"heads", a.heads},
                   {"segment", a.segment},
                   {"attention", a.attention},
                   {"superposition", a.superposition},
                   {"devices", a.devices},
                   {"vocabulary", a.vocabulary}}}};
  WritePolicyFileFacts(facts, parts.facts);
  parts.tensors = ModuleBytes(*net);
  WriteCheckpointFile(path, SealCheckpoint(parts, kPolicyHeader));
}

GdpNet LoadGdpPolicyFile(const std::string& path, const Cluster& cluster, GdpPolicyFileFacts* facts_out) {
  CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path), kPolicyHeader, "GDP policy file");
  const CheckpointFacts facts(path, parts.facts, "GDP policy file");
  const GdpPolicyFileFacts file_facts = ReadPolicyFileFacts(facts);
  const CheckpointFacts arch(path, facts.Object("architecture"), "GDP policy file");
  GdpArchitecture a;
  a.hidden = arch.Integer("hidden", 1, 4096);
  a.sage_layers = arch.Integer("sage_layers", 0, 64);
  a.placer_layers = arch.Integer("placer_layers", 0, 64);
  a.heads = arch.Integer("heads", 1, 256);
  a.segment = arch.Integer("segment", 1, 1 << 20);
  a.attention = arch.Boolean("attention");
  a.superposition = arch.Boolean("superposition");
  a.devices = arch.Integer("devices", 1, 1 << 20);
  if (a.hidden % a.heads != 0) facts.Fail("architecture's hidden width is not a multiple of its heads");
  for (const nlohmann::json& type : arch.Array("vocabulary")) {
    if (!type.is_string()) facts.Fail("'vocabulary' holds something other than op type names");
    a.vocabulary.push_back(type.get<std::string>());
  }
  if (a.vocabulary.empty() || a.vocabulary.size() > static_cast<size_t>(OpFeatures::kMaxTypes) || a.vocabulary.back() != "other") {
    facts.Fail("'vocabulary' must list at most " + std::to_string(OpFeatures::kMaxTypes) + " op types, \"other\" last");
  }
  RequireTrainedFor(path, "GDP", file_facts, a.devices, cluster);

  GdpNet net(a, 0.0);
  if (const std::string problem = LoadModuleBytes(*net, parts.tensors); !problem.empty()) facts.Fail("the policy " + problem);
  if (facts_out != nullptr) *facts_out = file_facts;
  return net;
}

}  // namespace devplace
