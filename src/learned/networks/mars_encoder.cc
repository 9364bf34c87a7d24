#include "learned/networks/mars_encoder.h"

#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/files/loaded_parameters.h"
#include "learned/files/run_files.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

constexpr std::string_view kEncoderHeader = "DEVPLACE-MARS-ENCODER 1\n";

}  // namespace

MarsEncoderImpl::MarsEncoderImpl(const MarsEncoderArchitecture& architecture) : architecture_(architecture) {
  const int64_t types = std::max<int64_t>(1, static_cast<int64_t>(architecture.vocabulary.size()));
  type_embedding_ = register_module("type_embedding", torch::nn::Embedding(types, kUnitTypeEmbedding));
  gcn_ = register_module("gcn", GcnEncoder(kUnitTypeEmbedding + kUnitNumericFeatures, architecture.hidden, architecture.layers));
}

torch::Tensor MarsEncoderImpl::forward(const UnitInputs& inputs, const torch::Tensor& corrupt) {
  torch::Tensor x = torch::cat({type_embedding_(inputs.type), inputs.numeric}, 1);
  if (corrupt.defined()) x = x.index_select(0, corrupt);
  return gcn_(x, inputs.src, inputs.dst);
}

void SaveMarsEncoderFile(const std::string& path, MarsEncoder& encoder, const MarsEncoderFileFacts& facts) {
  const MarsEncoderArchitecture& a = encoder->architecture();
  CheckpointParts parts;
  parts.facts = {{"graphs", facts.graphs},
                 {"steps", facts.steps},
                 {"loss", facts.loss},
                 {"architecture", MarsEncoderArchitectureJson(a)}};
  parts.tensors = ModuleBytes(*encoder);
  WriteCheckpointFile(path, SealCheckpoint(parts, kEncoderHeader));
}

MarsEncoder LoadMarsEncoderFile(const std::string& path, MarsEncoderFileFacts* facts_out) {
  const std::string noun = "Mars encoder file";
  CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path), kEncoderHeader, noun);
  const CheckpointFacts facts(path, parts.facts, noun);
  MarsEncoderFileFacts file_facts;
  for (const nlohmann::json& graph : facts.Array("graphs")) {
    if (!graph.is_string()) facts.Fail("'graphs' holds something other than names");
    file_facts.graphs.push_back(graph.get<std::string>());
  }
  file_facts.steps = facts.Integer("steps", 0, INT64_MAX);
  file_facts.loss = facts.Number("loss", 0);
  MarsEncoder encoder(ReadMarsEncoderArchitecture(CheckpointFacts(path, facts.Object("architecture"), noun)));
  if (const std::string problem = LoadModuleBytes(*encoder, parts.tensors); !problem.empty()) facts.Fail("the encoder " + problem);
  if (facts_out != nullptr) *facts_out = file_facts;
  return encoder;
}

nlohmann::json MarsEncoderArchitectureJson(const MarsEncoderArchitecture& a) {
  return {{"hidden", a.hidden},
          {"layers", a.layers},
          {"numeric_features", kUnitNumericFeatures},
          {"type_embedding", kUnitTypeEmbedding},
          {"vocabulary", a.vocabulary}};
}

MarsEncoderArchitecture ReadMarsEncoderArchitecture(const CheckpointFacts& arch) {
  const CheckpointFacts& facts = arch;
  MarsEncoderArchitecture a;
  a.hidden = arch.Integer("hidden", 1, 4096);
  a.layers = arch.Integer("layers", 1, 64);
  // The features an encoder reads are this build's (learned/networks/gdp_net.h): a file
  // written for another set would read them as something else.
  if (arch.Integer("numeric_features", 0, 1 << 20) != kUnitNumericFeatures || arch.Integer("type_embedding", 0, 1 << 20) != kUnitTypeEmbedding) {
    facts.Fail("the encoder reads another set of op features (" + std::to_string(kUnitNumericFeatures) + " numeric features and a type embedding of " +
               std::to_string(kUnitTypeEmbedding) + " here)");
  }
  for (const nlohmann::json& type : arch.Array("vocabulary")) {
    if (!type.is_string()) facts.Fail("'vocabulary' holds something other than op type names");
    a.vocabulary.push_back(type.get<std::string>());
  }
  if (a.vocabulary.empty() || a.vocabulary.size() > static_cast<size_t>(OpFeatures::kMaxTypes) || a.vocabulary.back() != "other") {
    facts.Fail("'vocabulary' is not a vocabulary of op types ending in \"other\"");
  }
  return a;
}

}  // namespace devplace
