#include "learned/networks/policy_file.h"

#include <algorithm>

#include "learned/features/device_features.h"
#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/files/loaded_parameters.h"
#include "learned/files/run_files.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

constexpr std::string_view kGdpPolicyHeader = "DEVPLACE-GDP-POLICY 1\n";
constexpr std::string_view kMarsPolicyHeader = "DEVPLACE-MARS-POLICY 1\n";

}  // namespace

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
                   {"encoder", a.encoder ? MarsEncoderArchitectureJson(*a.encoder) : nlohmann::json()},
                   {"head", a.sizes.head}}}};
  if (a.sizes.head == "devices") {
    parts.facts["architecture"]["device_features"] = a.device_features;
    parts.facts["architecture"]["device_scoring"] = a.sizes.device_scoring;
    parts.facts["architecture"]["device_links"] = a.sizes.device_links;
  }
  WritePolicyFileFacts(facts, parts.facts);
  parts.tensors = ModuleBytes(*net);
  WriteCheckpointFile(path, SealCheckpoint(parts, kGdpPolicyHeader));
}

GdpNet LoadGdpPolicyFile(const std::string& path, const Cluster& cluster, GdpPolicyFileFacts* facts_out) {
  CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path), kGdpPolicyHeader, "GDP policy file");
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
  // Written before the device-scoring head: no "head", the fixed one.
  a.sizes.head = arch.facts().contains("head") ? arch.String("head") : "fixed";
  if (a.sizes.head != "fixed" && a.sizes.head != "devices") facts.Fail("architecture's head is '" + ForMessage(a.sizes.head) + "', not fixed or devices");
  if (a.sizes.head == "devices") {
    a.devices = 0;
    a.sizes.device_scoring = arch.String("device_scoring");
    if (a.sizes.device_scoring != "dot" && a.sizes.device_scoring != "mlp") facts.Fail("architecture's device_scoring is not dot or mlp");
    a.sizes.device_links = arch.Boolean("device_links");
    const std::vector<std::string>& known = KnownDeviceFeatures();
    for (const nlohmann::json& feature : arch.Array("device_features")) {
      if (!feature.is_string()) facts.Fail("'device_features' holds something other than feature names");
      const std::string name = feature.get<std::string>();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        facts.Fail("the policy reads device feature '" + ForMessage(name) + "', which this devplace does not compute from a cluster");
      }
      a.device_features.push_back(name);
    }
    if (a.device_features.empty()) facts.Fail("'device_features' lists no feature for the device-scoring head");
  } else {
    a.devices = arch.Integer("devices", 1, 1 << 20);
  }
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
  // A device-scoring head places on any cluster; the fixed one only on its own.
  if (a.sizes.head != "devices") RequireTrainedFor(path, "GDP", file_facts, a.devices, cluster);

  GdpNet net(a, 0.0);
  if (const std::string problem = LoadModuleBytes(*net, parts.tensors); !problem.empty()) facts.Fail("the policy " + problem);
  if (facts_out != nullptr) *facts_out = file_facts;
  return net;
}

void SaveMarsPolicyFile(const std::string& path, MarsNet& net, const PolicyFileFacts& facts) {
  const MarsPlacerArchitecture& a = net->architecture();
  CheckpointParts parts;
  parts.facts = {{"encoder", MarsEncoderArchitectureJson(net->encoder()->architecture())},
                 {"placer", {{"hidden", a.hidden}, {"segment", a.segment}, {"devices", a.devices}}}};
  WritePolicyFileFacts(facts, parts.facts);
  parts.tensors = ModuleBytes(*net);
  WriteCheckpointFile(path, SealCheckpoint(parts, kMarsPolicyHeader));
}

MarsNet LoadMarsPolicyFile(const std::string& path, const Cluster& cluster, PolicyFileFacts* facts_out) {
  const std::string noun = "Mars policy file";
  CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path), kMarsPolicyHeader, noun);
  const CheckpointFacts facts(path, parts.facts, noun);
  const PolicyFileFacts file_facts = ReadPolicyFileFacts(facts);
  const MarsEncoderArchitecture encoder = ReadMarsEncoderArchitecture(CheckpointFacts(path, facts.Object("encoder"), noun));
  const CheckpointFacts placer(path, facts.Object("placer"), noun);
  MarsPlacerArchitecture a;
  a.hidden = placer.Integer("hidden", 1, 4096);
  a.segment = placer.Integer("segment", 1, 1 << 20);
  a.devices = placer.Integer("devices", 1, 1 << 20);
  RequireTrainedFor(path, "Mars", file_facts, a.devices, cluster);
  MarsNet net(MarsEncoder(encoder), a, 0.0);
  if (const std::string problem = LoadModuleBytes(*net, parts.tensors); !problem.empty()) facts.Fail("the policy " + problem);
  if (facts_out != nullptr) *facts_out = file_facts;
  return net;
}

}  // namespace devplace
