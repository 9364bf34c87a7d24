#include "learned/networks/gdp_net.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/files/loaded_parameters.h"
#include "learned/files/run_files.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

constexpr std::string_view kPolicyHeader = "DEVPLACE-GDP-POLICY 1\n";

}  // namespace

GdpNetImpl::GdpNetImpl(const GdpArchitecture& architecture, double start_bias) : architecture_(architecture) {
  if (architecture.encoder) {
    encoder_ = register_module("encoder", MarsEncoder(*architecture.encoder));
    encoder_projection_ = register_module("encoder_projection", torch::nn::Linear(architecture.encoder->hidden, architecture.sizes.hidden));
  } else {
    const int64_t types = std::max<int64_t>(1, static_cast<int64_t>(architecture.vocabulary.size()));
    type_embedding_ = register_module("type_embedding", torch::nn::Embedding(types, kUnitTypeEmbedding));
    sage_ = register_module("sage", GraphSage(kUnitTypeEmbedding + kUnitNumericFeatures, architecture.sizes.hidden, architecture.sizes.sage_layers));
  }
  SegmentAttentionOptions placer;
  placer.sizes = architecture.sizes;
  placer.devices = architecture.devices;
  placer_ = register_module("placer", SegmentAttention(placer));
  start_bias_ = register_parameter("start_bias", torch::full({1}, start_bias));
}

torch::Tensor GdpNetImpl::LogProbs(const UnitInputs& in, const torch::Tensor& start, double tanh_constant, double temperature) {
  torch::Tensor embeddings;
  if (encoder_) {
    embeddings = encoder_projection_(encoder_(in));
  } else {
    embeddings = sage_(torch::cat({type_embedding_(in.type), in.numeric}, 1), in.src, in.dst);
  }
  torch::Tensor logits = placer_(embeddings);
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
                  {{"hidden", a.sizes.hidden},
                   {"sage_layers", a.sizes.sage_layers},
                   {"placer_layers", a.sizes.placer_layers},
                   {"heads", a.sizes.heads},
                   {"segment", a.sizes.segment},
                   {"attention", a.sizes.attention},
                   {"superposition", a.sizes.superposition},
                   {"devices", a.devices},
                   {"vocabulary", a.vocabulary},
                   {"encoder", a.encoder ? MarsEncoderArchitectureJson(*a.encoder) : nlohmann::json()}}}};
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
  a.sizes.hidden = arch.Integer("hidden", 1, 4096);
  a.sizes.sage_layers = arch.Integer("sage_layers", 0, 64);
  a.sizes.placer_layers = arch.Integer("placer_layers", 0, 64);
  a.sizes.heads = arch.Integer("heads", 1, 256);
  a.sizes.segment = arch.Integer("segment", 1, 1 << 20);
  a.sizes.attention = arch.Boolean("attention");
  a.sizes.superposition = arch.Boolean("superposition");
  a.devices = arch.Integer("devices", 1, 1 << 20);
  if (a.sizes.hidden % a.sizes.heads != 0) facts.Fail("architecture's hidden width is not a multiple of its heads");
  for (const nlohmann::json& type : arch.Array("vocabulary")) {
    if (!type.is_string()) facts.Fail("'vocabulary' holds something other than op type names");
    a.vocabulary.push_back(type.get<std::string>());
  }
  if (a.vocabulary.empty() || a.vocabulary.size() > static_cast<size_t>(OpFeatures::kMaxTypes) || a.vocabulary.back() != "other") {
    facts.Fail("'vocabulary' must list at most " + std::to_string(OpFeatures::kMaxTypes) + " op types, \"other\" last");
  }
  // Written before the encoder experiment: no "encoder", GraphSAGE.
  if (arch.facts().contains("encoder") && !arch.facts()["encoder"].is_null()) {
    a.encoder = ReadMarsEncoderArchitecture(CheckpointFacts(path, arch.Object("encoder"), "GDP policy file"));
    if (a.encoder->vocabulary != a.vocabulary) facts.Fail("the encoder's vocabulary is not the policy's");
  }
  RequireTrainedFor(path, "GDP", file_facts, a.devices, cluster);

  GdpNet net(a, 0.0);
  if (const std::string problem = LoadModuleBytes(*net, parts.tensors); !problem.empty()) facts.Fail("the policy " + problem);
  if (facts_out != nullptr) *facts_out = file_facts;
  return net;
}

}  // namespace devplace
