#include "learned/networks/seq2seq_net.h"

#include "learned/networks/attention.h"
#include "util/stop_request.h"

namespace devplace {

Seq2SeqNetImpl::Seq2SeqNetImpl(const GroupFeatures& features, int64_t num_devices, const Seq2SeqOptions& options)
    : num_groups_(features.num_groups), num_devices_(num_devices), options_(options) {
  const int64_t G = num_groups_;
  std::vector<int64_t> types(features.type_id.begin(), features.type_id.end());
  type_ids_ = torch::tensor(types, torch::kInt64);

  // Shapes and the adjacency one-hot (who feeds me, whom I feed) are fixed
  // per graph: built once.
  const int64_t shape_width = GroupFeatures::kShapeFeatures;
  static_inputs_ = torch::zeros({G, shape_width + 2 * G});
  auto inputs = static_inputs_.accessor<float, 2>();
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t k = 0; k < shape_width; ++k) inputs[g][k] = features.shape_features[g * shape_width + k];
    for (int32_t src : features.inputs_of[g]) inputs[g][shape_width + src] = 1.0f;
    for (int32_t dst : features.outputs_of[g]) inputs[g][shape_width + G + dst] = 1.0f;
  }
  allowed_ = torch::zeros({G, num_devices}, torch::kBool);
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t d = 0; d < num_devices; ++d) allowed_[g][d] = static_cast<bool>(features.allowed[g][d]);
  }

  const int64_t encoder_input = options.type_embedding + shape_width + 2 * G;
  type_embedding_ = register_module("type_embedding", torch::nn::Embedding(std::max(1, features.num_types()), options.type_embedding));
  encoder_ = register_module(
      "encoder", torch::nn::LSTM(torch::nn::LSTMOptions(encoder_input, options.encoder_hidden).batch_first(true).bidirectional(true)));
  device_embedding_ = register_module("device_embedding", torch::nn::Embedding(num_devices + 1, options.device_embedding));
  decoder_init_ = register_module("decoder_init", torch::nn::Linear(2 * options.encoder_hidden, options.decoder_hidden));
  decoder_ = register_module(
      "decoder", torch::nn::LSTM(torch::nn::LSTMOptions(options.device_embedding, options.decoder_hidden).batch_first(true)));
  attention_encoder_ = register_module("attention_encoder", torch::nn::Linear(torch::nn::LinearOptions(2 * options.encoder_hidden, options.attention_hidden).bias(false)));
  attention_decoder_ = register_module("attention_decoder", torch::nn::Linear(options.decoder_hidden, options.attention_hidden));
  attention_score_ = register_module("attention_score", torch::nn::Linear(torch::nn::LinearOptions(options.attention_hidden, 1).bias(false)));
  output_ = register_module("output", torch::nn::Linear(options.decoder_hidden + 2 * options.encoder_hidden, num_devices));
  // Start from the uniform policy: with logits scaled by tanh_constant, a
  // random output layer would already favour arbitrary devices strongly and
  // REINFORCE would only sharpen that first guess.
  torch::NoGradGuard no_grad;
  output_->weight.zero_();
  output_->bias.zero_();
  stay_bias_ = register_parameter("stay_bias", torch::tensor(static_cast<float>(options.stay_bias)));
}

Seq2SeqNetImpl::Encoded Seq2SeqNetImpl::Encode() {
  Encoded e;
  torch::Tensor embedded = torch::cat({type_embedding_(type_ids_), static_inputs_}, 1).unsqueeze(0);  // [1, G, in]
  e.values = std::get<0>(encoder_->forward(embedded));                                                // [1, G, 2H]
  e.keys = attention_encoder_(e.values);                                                              // [1, G, A]
  // The decoder starts from the encoder's summary of the whole graph.
  e.h0 = torch::tanh(decoder_init_(e.values.mean(1))).unsqueeze(0);  // [1, 1, decoder]
  e.c0 = torch::zeros_like(e.h0);
  return e;
}

torch::Tensor Seq2SeqNetImpl::Logits(const Encoded& encoded, const torch::Tensor& query, int64_t first,
                                        const torch::Tensor& previous) {
  const int64_t T = query.size(1);
  // Bahdanau attention: score(step, group) = v . tanh(W_k key_group + W_q query_step),
  // taken a chunk of steps at a time so that no [K, T, G, A] tensor is ever
  // held (learned/networks/attention.h).
  torch::Tensor q = attention_decoder_(query);  // [K, T, A]
  torch::Tensor context = AttentionContext(encoded.keys, encoded.values, q, attention_score_->weight.view({-1}));  // [K, T, 2H]
  torch::Tensor logits = output_(torch::cat({query, context}, 2));  // [K, T, D]
  logits = options_.tanh_constant * torch::tanh(logits / options_.temperature);
  // The start token is one class past the devices: its column is dropped.
  torch::Tensor was_previous = torch::one_hot(previous, num_devices_ + 1).narrow(2, 0, num_devices_).to(torch::kFloat);
  logits = logits + stay_bias_ * was_previous;
  torch::Tensor blocked = allowed_.narrow(0, first, T).logical_not().unsqueeze(0);  // [1, T, D]
  return logits.masked_fill(blocked, -1e9);
}

Seq2SeqNetImpl::Samples Seq2SeqNetImpl::Sample(int64_t count, torch::Generator& generator, double logit_noise_std,
                                                     bool greedy) {
  return Sample(Encode(), count, generator, logit_noise_std, greedy);
}

Seq2SeqNetImpl::Samples Seq2SeqNetImpl::Sample(const Encoded& encoded, int64_t count, torch::Generator& generator,
                                                     double logit_noise_std, bool greedy, torch::Tensor* decoder_outputs) {
  const int64_t G = num_groups_;
  const bool keep = decoder_outputs != nullptr;
  const Encoded fixed = encoded.detach();
  // Step by step with the decoder LSTM's own weights: the functional cell
  // skips the module's per-call checks, and computes what it computes.
  auto decoder_weights = decoder_->named_parameters();
  torch::Tensor w_ih = decoder_weights["weight_ih_l0"];
  torch::Tensor w_hh = decoder_weights["weight_hh_l0"];
  torch::Tensor b_ih = decoder_weights["bias_ih_l0"];
  torch::Tensor b_hh = decoder_weights["bias_hh_l0"];
  torch::Tensor h, c;
  {
    torch::AutoGradMode grad(keep);
    const Encoded& start = keep ? encoded : fixed;
    h = start.h0.squeeze(0).expand({count, start.h0.size(2)}).contiguous();
    c = start.c0.squeeze(0).expand({count, start.c0.size(2)}).contiguous();
  }
  torch::NoGradGuard no_grad;
  torch::Tensor previous = torch::full({count}, num_devices_, torch::kInt64);  // the start token
  torch::Tensor log_prob = torch::zeros({count});
  torch::Tensor entropy = torch::zeros({count});
  std::vector<torch::Tensor> choices, outputs;
  choices.reserve(G);
  if (keep) outputs.reserve(G);
  for (int64_t g = 0; g < G; ++g) {
    // One step is milliseconds, the whole decision minutes on 5,000 groups:
    // a stop drops the samples drawn so far.
    ThrowIfStopRequested();
    if (g == G / 2) StopTestPoint("sample");
    {
      torch::AutoGradMode grad(keep);
      std::tie(h, c) = torch::lstm_cell(device_embedding_(previous), {h, c}, w_ih, w_hh, b_ih, b_hh);
      if (keep) outputs.push_back(h);
    }
    torch::Tensor logits = Logits(fixed, h.detach().unsqueeze(1), g, previous.unsqueeze(1)).squeeze(1);  // [K, D]
    if (logit_noise_std > 0) {
      logits = logits + torch::randn(logits.sizes(), generator) * logit_noise_std;
      logits = logits.masked_fill(allowed_[g].logical_not().unsqueeze(0), -1e9);
    }
    torch::Tensor log_probs = torch::log_softmax(logits, 1);
    torch::Tensor choice = greedy ? log_probs.argmax(1)
                                  : torch::multinomial(log_probs.exp(), 1, /*replacement=*/true, generator).squeeze(1);
    log_prob = log_prob + log_probs.gather(1, choice.unsqueeze(1)).squeeze(1);
    entropy = entropy - (log_probs.exp() * log_probs).sum(1);
    choices.push_back(choice);
    previous = choice;
  }
  if (keep) {
    torch::AutoGradMode grad(true);
    *decoder_outputs = torch::stack(outputs, 1);  // [K, G, decoder]
  }
  Samples out;
  out.log_prob = log_prob;
  out.entropy = entropy;
  torch::Tensor all = torch::stack(choices, 1).contiguous();  // [K, G]
  auto a = all.accessor<int64_t, 2>();
  out.devices.assign(count, std::vector<int32_t>(G));
  for (int64_t k = 0; k < count; ++k) {
    for (int64_t g = 0; g < G; ++g) out.devices[k][g] = static_cast<int32_t>(a[k][g]);
  }
  return out;
}

Seq2SeqNetImpl::Samples Seq2SeqNetImpl::Score(const std::vector<std::vector<int32_t>>& devices) {
  return Score(Encode(), devices);
}

namespace {

// [K, G] int64 of the given placements.
torch::Tensor ChosenDevices(const std::vector<std::vector<int32_t>>& devices, int64_t groups) {
  std::vector<int64_t> flat;
  flat.reserve(devices.size() * groups);
  for (const auto& placement : devices) flat.insert(flat.end(), placement.begin(), placement.end());
  return torch::tensor(flat, torch::kInt64).view({static_cast<int64_t>(devices.size()), groups});
}

}  // namespace

Seq2SeqNetImpl::Samples Seq2SeqNetImpl::Score(const Encoded& encoded, const std::vector<std::vector<int32_t>>& devices) {
  const int64_t G = num_groups_;
  const int64_t K = static_cast<int64_t>(devices.size());
  torch::Tensor chosen = ChosenDevices(devices, G);
  // Teacher forcing: step g sees the device chosen at g - 1.
  torch::Tensor previous = torch::cat({torch::full({K, 1}, num_devices_, torch::kInt64), chosen.narrow(1, 0, G - 1)}, 1);
  auto state = std::make_tuple(encoded.h0.expand({1, K, encoded.h0.size(2)}).contiguous(),
                               encoded.c0.expand({1, K, encoded.c0.size(2)}).contiguous());
  torch::Tensor outputs = std::get<0>(decoder_->forward(device_embedding_(previous), state));  // [K, G, decoder]
  return ScoreOutputs(encoded, outputs, devices);
}

Seq2SeqNetImpl::Samples Seq2SeqNetImpl::ScoreOutputs(const Encoded& encoded, const torch::Tensor& decoder_outputs,
                                                         const std::vector<std::vector<int32_t>>& devices) {
  const int64_t G = num_groups_;
  const int64_t K = static_cast<int64_t>(devices.size());
  torch::Tensor chosen = ChosenDevices(devices, G);
  torch::Tensor previous = torch::cat({torch::full({K, 1}, num_devices_, torch::kInt64), chosen.narrow(1, 0, G - 1)}, 1);
  torch::Tensor log_probs = torch::log_softmax(Logits(encoded, decoder_outputs, 0, previous), 2);  // [K, G, D]
  Samples out;
  out.devices = devices;
  out.log_prob = log_probs.gather(2, chosen.unsqueeze(2)).squeeze(2).sum(1);
  out.entropy = -(log_probs.exp() * log_probs).sum({1, 2});
  return out;
}

}  // namespace devplace
