#include "learned/networks/device_head.h"

#include <cmath>

#include "learned/features/device_features.h"
#include "util/error.h"

namespace devplace {

DeviceHeadImpl::DeviceHeadImpl(const DeviceHeadArchitecture& architecture, int64_t width)
    : architecture_(architecture), width_(width) {
  if (architecture.scoring != "dot" && architecture.scoring != "mlp") {
    throw Error("device head scoring must be dot or mlp, got '" + ForMessage(architecture.scoring) + "'");
  }
  const int64_t F = static_cast<int64_t>(architecture.features.size());
  embed_in_ = register_module("embed_in", torch::nn::Linear(F, width));
  embed_out_ = register_module("embed_out", torch::nn::Linear(width, width));
  if (architecture.links) {
    message_ = register_module("message", torch::nn::Linear(width + kDevicePairFeatures, width));
    update_ = register_module("update", torch::nn::Linear(width, width));
    norm_ = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})));
  }
  if (architecture.scoring == "mlp") {
    unit_side_ = register_module("unit_side", torch::nn::Linear(width, width));
    device_side_ = register_module("device_side", torch::nn::Linear(width, width));
    pair_out_ = register_module("pair_out", torch::nn::Linear(width, 1));
  } else {
    device_bias_ = register_module("device_bias", torch::nn::Linear(width, 1));
  }
}

torch::Tensor DeviceHeadImpl::forward(const torch::Tensor& units, const torch::Tensor& devices, const torch::Tensor& pairs) {
  const int64_t D = devices.size(0);
  torch::Tensor k = embed_out_(torch::relu(embed_in_(devices)));  // [D, W]
  if (architecture_.links && D > 1) {
    // Device d hears every other device e through the route d -> e: a
    // message of e's embedding and the route, averaged over the others.
    torch::Tensor senders = k.unsqueeze(0).expand({D, D, width_});                  // [d, e, W]: e's embedding
    torch::Tensor messages = torch::relu(message_(torch::cat({senders, pairs}, 2)));  // [D, D, W]
    torch::Tensor others = (1 - torch::eye(D, k.options())).unsqueeze(2);
    k = norm_(k + update_((messages * others).sum(1) / static_cast<double>(D - 1)));
  }
  if (architecture_.scoring == "dot") {
    return torch::matmul(units, k.t()) / std::sqrt(static_cast<double>(width_)) + device_bias_(k).view({1, D});
  }
  torch::Tensor hidden = torch::relu(unit_side_(units).unsqueeze(1) + device_side_(k).unsqueeze(0));  // [U, D, W]
  return pair_out_(hidden).squeeze(2);
}

}  // namespace devplace
