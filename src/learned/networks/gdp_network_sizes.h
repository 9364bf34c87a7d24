// The sizes that shape GDP's network (learned/networks/gdp_net.h): what
// `--gdp-*` sets in LearnedOptions, what a GDP architecture and its policy
// file hold, and what its segment placer (learned/networks/segment_attention.h)
// is built from. One struct for all three, so a size is named once. No torch
// here: the command line's options hold it.
#pragma once

#include <cstdint>
#include <string>

namespace devplace {

struct GdpNetworkSizes {
  int64_t hidden = 64;        // GraphSAGE's and the placer's width
  int64_t sage_layers = 3;    // a node sees neighbours this many edges away (GraphSAGE's; the placer ignores it)
  int64_t placer_layers = 2;  // the placer's attention layers
  int64_t heads = 4;
  int64_t segment = 128;      // units per Transformer-XL segment
  bool attention = true;      // false: the paper's ablation "segment recurrence only"
  bool superposition = true;  // false: the paper's ablation without the graph context
  // "fixed": the placer's output layer gives a logit per device of one
  // cluster (the paper's; a policy is bound to that device count).
  // "devices": the device-scoring head (learned/networks/device_head.h)
  // scores each unit against each device's features, on any cluster.
  std::string head = "fixed";
  std::string device_scoring = "mlp";  // the device head's: "dot" or "mlp"
  bool device_links = true;            // the device head's round of messages over routes
};

}  // namespace devplace
