// GDP's network (Zhou et al.) and what it reads of a graph: an op-type
// embedding over a vocabulary shared by every graph it places, GraphSAGE
// (learned/networks/graph_sage.h) over the graph's co-location units, and the segment
// placer (learned/networks/segment_attention.h) giving every unit its device logits in one
// pass. One network serves many graphs: nothing in it depends on a graph's
// size or ids; with the fixed head (the paper's) it depends on the
// cluster's device count, with the device-scoring head on nothing of the
// cluster but its devices' features. Its policy file (a
// trained network with its architecture, vocabulary and cluster) is here too.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "graph/graph.h"
#include "learned/networks/device_head.h"
#include "learned/networks/gdp_network_sizes.h"
#include "learned/networks/graph_sage.h"
#include "learned/networks/mars_encoder.h"
#include "learned/networks/unit_inputs.h"
#include "learned/files/policy_file_facts.h"
#include "learned/networks/segment_attention.h"

namespace devplace {

struct GdpArchitecture {
  GdpNetworkSizes sizes;
  // The fixed head's device count; 0 with a device-scoring head, which
  // places on any cluster.
  int64_t devices = 0;
  // With sizes.head "devices": the device features its head reads.
  std::vector<std::string> device_features;
  // The op types embedded, "other" last: every other type shares its id.
  std::vector<std::string> vocabulary;
  // Issue 15's experiment: a Mars encoder (learned/networks/mars_encoder.h, pre-trained by
  // `devplace pretrain`) in GraphSAGE's place, its output projected to
  // `hidden`; the vocabulary is then the encoder's. None: GraphSAGE.
  std::optional<MarsEncoderArchitecture> encoder;
};

class GdpNetImpl : public torch::nn::Module {
 public:
  // `start_bias`: the learned scalar added to the logit of each unit's
  // start device (GdpPolicy's start probes choose it per graph).
  GdpNetImpl(const GdpArchitecture& architecture, double start_bias);

  // [U, D] log-probabilities; devices a unit cannot use at about -1e4 below
  // the rest. `start`: [U, D] one-hot of each unit's start device (all
  // zeros: no start). Logits are C tanh(x / T) as in every learned placer.
  torch::Tensor LogProbs(const UnitInputs& inputs, const torch::Tensor& start, double tanh_constant, double temperature);

  const GdpArchitecture& architecture() const { return architecture_; }
  torch::Tensor start_bias() const { return start_bias_; }
  // The Mars encoder in GraphSAGE's place; null without one.
  MarsEncoder& encoder() { return encoder_; }
  // Replaces the learned start bonus (a loaded policy given --start-bias).
  void set_start_bias(double value);

 private:
  GdpArchitecture architecture_;
  torch::nn::Embedding type_embedding_{nullptr};
  GraphSage sage_{nullptr};
  MarsEncoder encoder_{nullptr};
  torch::nn::Linear encoder_projection_{nullptr};
  SegmentAttention placer_{nullptr};
  DeviceHead device_head_{nullptr};
  torch::Tensor start_bias_;
};
TORCH_MODULE(GdpNet);

}  // namespace devplace
