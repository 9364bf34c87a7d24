#include "learned/networks/mars_net.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

constexpr int64_t kDeviceEmbedding = 16;
constexpr double kBlocked = -1e9;  // the logit of a device a unit may not use

}  // namespace

MarsNetImpl::MarsNetImpl(MarsEncoder encoder, const MarsPlacerArchitecture& a, double start_bias) : architecture_(a) {
  encoder_ = register_module("encoder", std::move(encoder));
  const int64_t H = a.hidden, embedding = encoder_->architecture().hidden;
  unit_reader_ = register_module("unit_reader", torch::nn::LSTM(torch::nn::LSTMOptions(embedding, H).batch_first(true)));
  device_embedding_ = register_module("device_embedding", torch::nn::Embedding(a.devices + 1, kDeviceEmbedding));
  decoder_init_ = register_module("decoder_init", torch::nn::Linear(H, H));
  decoder_ = register_module("decoder", torch::nn::LSTM(torch::nn::LSTMOptions(kDeviceEmbedding + H, H).batch_first(true)));
  key_ = register_module("key", torch::nn::Linear(torch::nn::LinearOptions(H, H).bias(false)));
  query_ = register_module("query", torch::nn::Linear(torch::nn::LinearOptions(H, H).bias(false)));
  output_ = register_module("output", torch::nn::Linear(2 * H, a.devices));
  // Start from the uniform policy (plus the start bonus): a random output
  // layer scaled by C would already favour arbitrary devices strongly.
  torch::NoGradGuard no_grad;
  output_->weight.zero_();
  output_->bias.zero_();
  start_bias_ = register_parameter("start_bias", torch::tensor(static_cast<float>(start_bias)));
}

std::vector<torch::Tensor> MarsNetImpl::placer_parameters() const {
  std::vector<torch::Tensor> out;
  const std::vector<torch::Tensor> encoder = encoder_->parameters();
  for (const torch::Tensor& p : parameters()) {
    const bool in_encoder = std::any_of(encoder.begin(), encoder.end(),
                                        [&](const torch::Tensor& e) { return e.unsafeGetTensorImpl() == p.unsafeGetTensorImpl(); });
    if (!in_encoder) out.push_back(p);
  }
  return out;
}

MarsNetImpl::Encoded MarsNetImpl::Encode(const UnitInputs& inputs, bool encoder_frozen) {
  torch::Tensor embeddings;
  if (encoder_frozen) {
    torch::NoGradGuard no_grad;
    embeddings = encoder_(inputs);
  } else {
    embeddings = encoder_(inputs);
  }
  Encoded e;
  e.values = std::get<0>(unit_reader_->forward(embeddings.unsqueeze(0))).squeeze(0);  // [U, H]
  e.keys = key_(e.values);
  e.h0 = torch::tanh(decoder_init_(e.values.mean(0, /*keepdim=*/true)));  // [1, H]
  e.c0 = torch::zeros_like(e.h0);
  return e;
}

void MarsNetImpl::set_start_bias(double value) {
  torch::NoGradGuard no_grad;
  start_bias_.fill_(value);
}

torch::Tensor MarsNetImpl::LogProbs(const torch::Tensor& h, const torch::Tensor& context, int64_t first, const torch::Tensor& start,
                                    const torch::Tensor& allowed, double tanh_constant, double temperature) {
  const int64_t T = h.size(1);
  torch::Tensor logits = tanh_constant * torch::tanh(output_(torch::cat({h, context}, 2)) / temperature);  // [K, T, D]
  logits = logits + start_bias_ * start.narrow(0, first, T).unsqueeze(0);
  logits = logits.masked_fill(allowed.narrow(0, first, T).logical_not().unsqueeze(0), kBlocked);
  return torch::log_softmax(logits, 2);
}

MarsNetImpl::Scored MarsNetImpl::Score(const Encoded& e, const torch::Tensor& chosen, const torch::Tensor& start,
                                       const torch::Tensor& allowed, double tanh_constant, double temperature) {
  const int64_t K = chosen.size(0), U = chosen.size(1), H = architecture_.hidden, S = architecture_.segment;
  // Teacher forcing: unit u's decoder input is the device of unit u - 1
  // (the start token first) and the encoder's output for u.
  const torch::Tensor previous =
      torch::cat({torch::full({K, 1}, architecture_.devices, torch::kInt64), chosen.narrow(1, 0, U - 1)}, 1);
  const torch::Tensor input = torch::cat({device_embedding_(previous), e.values.unsqueeze(0).expand({K, U, H})}, 2);
  auto state = std::make_tuple(e.h0.unsqueeze(0).expand({1, K, H}).contiguous(), e.c0.unsqueeze(0).expand({1, K, H}).contiguous());
  const torch::Tensor h = std::get<0>(decoder_->forward(input, state));  // [K, U, H]
  return ScoreOutputs(e, h, chosen, start, allowed, tanh_constant, temperature);
}

MarsNetImpl::Scored MarsNetImpl::ScoreOutputs(const Encoded& e, const torch::Tensor& h, const torch::Tensor& chosen,
                                              const torch::Tensor& start, const torch::Tensor& allowed, double tanh_constant,
                                              double temperature) {
  const int64_t K = chosen.size(0), U = chosen.size(1), H = architecture_.hidden, S = architecture_.segment;

  // Attention within each segment: pad the units to whole segments.
  const int64_t segments = (U + S - 1) / S, padded = segments * S;
  auto pad = [&](const torch::Tensor& x, int64_t dim) {
    if (padded == U) return x;
    std::vector<int64_t> shape = x.sizes().vec();
    shape[dim] = padded - U;
    return torch::cat({x, torch::zeros(shape, x.options())}, dim);
  };
  const torch::Tensor keys = pad(e.keys, 0).view({segments, S, H});
  const torch::Tensor values = pad(e.values, 0).view({segments, S, H});
  const torch::Tensor queries = pad(query_(h), 1).view({K, segments, S, H});
  torch::Tensor scores = torch::matmul(queries, keys.transpose(1, 2).unsqueeze(0)) / std::sqrt(static_cast<double>(H));  // [K, n, S, S]
  if (padded != U) {
    const torch::Tensor padding = torch::arange(padded, torch::kInt64).ge(U).view({1, segments, 1, S});
    scores = scores.masked_fill(padding, -std::numeric_limits<float>::infinity());
  }
  const torch::Tensor context = torch::matmul(torch::softmax(scores, 3), values.unsqueeze(0)).view({K, padded, H}).narrow(1, 0, U);

  const torch::Tensor log_probs = LogProbs(h, context, 0, start, allowed, tanh_constant, temperature);  // [K, U, D]
  Scored out;
  out.log_prob = log_probs.gather(2, chosen.unsqueeze(2)).squeeze(2).sum(1);
  out.entropy = -(log_probs.exp() * log_probs).sum({1, 2});
  return out;
}

MarsNetImpl::Sampled MarsNetImpl::Sample(const Encoded& e, int64_t K, torch::Generator& generator, const torch::Tensor& start,
                                         const torch::Tensor& allowed, double tanh_constant, double temperature,
                                         double logit_noise_std, bool greedy, torch::Tensor* decoder_outputs) {
  const bool keep = decoder_outputs != nullptr;
  const Encoded& grad_e = e;  // what the kept steps differentiate
  const Encoded fixed = e.detach();
  const int64_t U = e.values.size(0), H = architecture_.hidden, S = architecture_.segment;
  // Step by step with the decoder LSTM's own weights (as the 2017 policy).
  auto weights = decoder_->named_parameters();
  const torch::Tensor w_ih = weights["weight_ih_l0"], w_hh = weights["weight_hh_l0"];
  const torch::Tensor b_ih = weights["bias_ih_l0"], b_hh = weights["bias_hh_l0"];
  torch::Tensor h, c;
  {
    torch::AutoGradMode grad(keep);
    const Encoded& from = keep ? grad_e : fixed;
    h = from.h0.expand({K, H}).contiguous();
    c = from.c0.expand({K, H}).contiguous();
  }
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> outputs;
  torch::Tensor previous = torch::full({K}, architecture_.devices, torch::kInt64);
  torch::Tensor log_prob = torch::zeros({K}), entropy = torch::zeros({K});
  std::vector<torch::Tensor> choices;
  choices.reserve(U);
  const double scale = std::sqrt(static_cast<double>(H));
  for (int64_t u = 0; u < U; ++u) {
    ThrowIfStopRequested();  // a stop drops the samples drawn so far
    {
      torch::AutoGradMode grad(keep);
      const Encoded& from = keep ? grad_e : fixed;
      const torch::Tensor input = torch::cat({device_embedding_(previous), from.values[u].unsqueeze(0).expand({K, H})}, 1);
      std::tie(h, c) = torch::lstm_cell(input, {h, c}, w_ih, w_hh, b_ih, b_hh);
      if (keep) outputs.push_back(h);
    }
    const torch::Tensor state = h.detach();
    const int64_t first = (u / S) * S, length = std::min(S, U - first);
    const torch::Tensor scores = torch::matmul(query_(state), fixed.keys.narrow(0, first, length).t()) / scale;  // [K, length]
    const torch::Tensor context = torch::matmul(torch::softmax(scores, 1), fixed.values.narrow(0, first, length));
    const torch::Tensor log_probs =
        LogProbs(state.unsqueeze(1), context.unsqueeze(1), u, start, allowed, tanh_constant, temperature).squeeze(1);  // [K, D]
    torch::Tensor choice;
    if (greedy) {
      choice = log_probs.argmax(1);
    } else if (logit_noise_std > 0) {
      const torch::Tensor noisy = torch::log_softmax(log_probs + torch::randn(log_probs.sizes(), generator) * logit_noise_std, 1);
      choice = torch::multinomial(noisy.exp(), 1, true, generator).squeeze(1);
    } else {
      choice = torch::multinomial(log_probs.exp(), 1, true, generator).squeeze(1);
    }
    log_prob += log_probs.gather(1, choice.unsqueeze(1)).squeeze(1);
    entropy -= (log_probs.exp() * log_probs).sum(1);
    choices.push_back(choice);
    previous = choice;
  }
  if (keep) {
    torch::AutoGradMode grad(true);
    *decoder_outputs = torch::stack(outputs, 1);  // [K, U, H]
  }
  Sampled out;
  out.chosen = torch::stack(choices, 1);
  out.log_prob = log_prob;
  out.entropy = entropy;
  return out;
}

}  // namespace devplace
