// A device-scoring head for a unit-placing network (GDP's, issue 50): each
// device of the cluster becomes an embedding of its features
// (learned/features/device_features.h), optionally refined by one round of
// messages from the other devices over the routes between them, and each
// (unit, device) pair gets a logit from the unit's embedding and the
// device's. Nothing in it depends on how many devices there are or in
// which order: any cluster works, and reordering the devices reorders the
// logits' columns and nothing else.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace devplace {

struct DeviceHeadArchitecture {
  std::vector<std::string> features;  // the device features read, in column order
  // "dot": q_u . k_d / sqrt(width) plus a learned bias of k_d; "mlp": a
  // hidden layer over the pair, v . relu(A q_u + B k_d).
  std::string scoring = "mlp";
  bool links = true;  // one round of messages between devices over their routes
};

class DeviceHeadImpl : public torch::nn::Module {
 public:
  // `width`: the unit embeddings' width, and the devices'.
  DeviceHeadImpl(const DeviceHeadArchitecture& architecture, int64_t width);

  // units: [U, width]; devices: [D, features]; pairs: [D, D,
  // kDevicePairFeatures]. Returns [U, D] logits (unmasked).
  torch::Tensor forward(const torch::Tensor& units, const torch::Tensor& devices, const torch::Tensor& pairs);

  const DeviceHeadArchitecture& architecture() const { return architecture_; }

 private:
  DeviceHeadArchitecture architecture_;
  int64_t width_;
  torch::nn::Linear embed_in_{nullptr}, embed_out_{nullptr};
  torch::nn::Linear message_{nullptr}, update_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  torch::nn::Linear unit_side_{nullptr}, device_side_{nullptr}, pair_out_{nullptr}, device_bias_{nullptr};
};
TORCH_MODULE(DeviceHead);

}  // namespace devplace
