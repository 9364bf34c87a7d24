#include "learned/networks/gdp_net.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_map>

#include "util/error.h"

namespace devplace {

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
  if (architecture.sizes.head == "devices") {
    // The placer's output is then each unit's embedding for the head.
    placer.devices = architecture.sizes.hidden;
    DeviceHeadArchitecture head;
    head.features = architecture.device_features;
    head.scoring = architecture.sizes.device_scoring;
    head.links = architecture.sizes.device_links;
    if (head.features.empty()) throw Error("a GDP network with a device-scoring head reads no device features");
    device_head_ = register_module("device_head", DeviceHead(head, architecture.sizes.hidden));
  } else {
    placer.devices = architecture.devices;
  }
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
  if (device_head_) {
    if (!in.device_features.defined()) throw Error("internal: a device-scoring GDP network given no device features");
    logits = device_head_(logits, in.device_features, in.device_pairs);
  }
  logits = tanh_constant * torch::tanh(logits / temperature) + start_bias_ * start;
  return torch::log_softmax(logits.masked_fill(in.allowed.logical_not(), -1e4), 1);
}

void GdpNetImpl::set_start_bias(double value) {
  torch::NoGradGuard no_grad;
  start_bias_.fill_(value);
}

}  // namespace devplace
