// Mars's graph encoder (Lan et al. 2021) as a network and as a file: an
// op-type embedding over a vocabulary shared by the graphs it reads, then
// the GCN of learned/networks/deep_graph_infomax.h, over the same unit features GDP reads
// (learned/networks/unit_inputs.h). `devplace pretrain` trains it by Deep Graph Infomax and
// writes it; Mars's placer reads graphs through it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "learned/files/checkpoint_facts.h"
#include "learned/networks/deep_graph_infomax.h"
#include "learned/networks/unit_inputs.h"

namespace devplace {

struct MarsEncoderArchitecture {
  int64_t hidden = 64;
  int64_t layers = 2;
  // The op types embedded, "other" last (UnitVocabulary's rule).
  std::vector<std::string> vocabulary;
};

class MarsEncoderImpl : public torch::nn::Module {
 public:
  explicit MarsEncoderImpl(const MarsEncoderArchitecture& architecture);

  // The units' embeddings, [U, hidden]. `corrupt`: a permutation of the
  // units ([U] int64) whose features to read instead, DGI's negatives; an
  // undefined tensor reads the graph as it is.
  torch::Tensor forward(const UnitInputs& inputs, const torch::Tensor& corrupt = {});

  const MarsEncoderArchitecture& architecture() const { return architecture_; }

 private:
  MarsEncoderArchitecture architecture_;
  torch::nn::Embedding type_embedding_{nullptr};
  GcnEncoder gcn_{nullptr};
};
TORCH_MODULE(MarsEncoder);

// A trained encoder as a file, sealed with a checksum (learned/files/checkpoint_file.h):
// its architecture and vocabulary, the graphs it was trained on, the steps
// and the DGI loss it reached.
struct MarsEncoderFileFacts {
  std::vector<std::string> graphs;
  int64_t steps = 0;
  double loss = 0;
};
void SaveMarsEncoderFile(const std::string& path, MarsEncoder& encoder, const MarsEncoderFileFacts& facts);

// Throws Error in one line naming the file when it is not a Mars encoder
// file, is damaged, or its tensors are not of the architecture it states.
MarsEncoder LoadMarsEncoderFile(const std::string& path, MarsEncoderFileFacts* facts = nullptr);

// An encoder's architecture as a file's facts, and back (Mars's policy file
// holds one too); reading throws Error naming the file when it is not one
// this build can read (another op-feature layout, a bad vocabulary).
nlohmann::json MarsEncoderArchitectureJson(const MarsEncoderArchitecture& architecture);
MarsEncoderArchitecture ReadMarsEncoderArchitecture(const CheckpointFacts& architecture);

}  // namespace devplace
