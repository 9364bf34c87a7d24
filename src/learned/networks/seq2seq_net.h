// The 2017 paper's policy (§3.2): a bidirectional LSTM reads the groups in
// topological order, each embedded as its op type, output shapes and
// adjacency; an LSTM decoder with content-based (Bahdanau) attention emits a
// device per group, fed the embedding of the device it chose last.
//
// The decoder's input is only that device embedding (the attention context
// does not feed back into it), so scoring given placements runs the decoder
// LSTM over the whole sequence at once and attends for all steps in one
// batch; only sampling goes step by step. Both use the same modules, so they
// agree on every probability.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "learned/features/group_features.h"

namespace devplace {

struct Seq2SeqOptions {
  int64_t type_embedding = 32;
  int64_t encoder_hidden = 256;  // each direction
  int64_t decoder_hidden = 512;
  int64_t device_embedding = 32;
  int64_t attention_hidden = 32;  // time grows with groups squared times this; memory does not (learned/networks/attention.h)
  double temperature = 1.0;      // logits -> tanh_constant * tanh(logits / temperature)
  double tanh_constant = 5.0;
  // Added to the logit of the device chosen at the step before, learned from
  // this starting value (0: none). Groups read chain by chain make a good
  // placement a few long runs of one device; starting out sticky makes the
  // first samples such runs rather than devices drawn afresh per group.
  double stay_bias = 0.0;
};

class Seq2SeqNetImpl : public torch::nn::Module {
 public:
  Seq2SeqNetImpl(const GroupFeatures& features, int64_t num_devices, const Seq2SeqOptions& options);

  struct Samples {
    std::vector<std::vector<int32_t>> devices;  // [sample][group]
    torch::Tensor log_prob;                     // [samples], of the whole placement
    torch::Tensor entropy;                      // [samples], summed over groups
  };

  // Draws `count` placements. `logit_noise_std` > 0 adds Gaussian noise to
  // the logits before sampling (an exploration aid of the public code).
  // With `greedy`, takes the most likely device at each step instead.
  Samples Sample(int64_t count, torch::Generator& generator, double logit_noise_std = 0, bool greedy = false);

  // The encoder's reading of the graph. A training step encodes once, samples
  // from the detached encoding, and scores with the differentiable one.
  struct Encoded {
    torch::Tensor values;  // [1, G, 2H]: what attention returns
    torch::Tensor keys;    // [1, G, A]: what attention compares against
    torch::Tensor h0, c0;  // [1, 1, decoder]: the decoder's first state
    Encoded detach() const { return {values.detach(), keys.detach(), h0.detach(), c0.detach()}; }
  };
  Encoded Encode();
  // With `decoder_outputs`, the decoder's steps run with gradients (from
  // `encoded`'s first state) and their outputs [K, G, decoder] go there, for
  // ScoreOutputs; the rest of sampling has none. Without, nothing has.
  Samples Sample(const Encoded& encoded, int64_t count, torch::Generator& generator, double logit_noise_std = 0,
                 bool greedy = false, torch::Tensor* decoder_outputs = nullptr);
  Samples Score(const Encoded& encoded, const std::vector<std::vector<int32_t>>& devices);
  // Score given the decoder's outputs for `devices` (teacher-forced, as
  // Sample kept them): the same log-probabilities without running the
  // decoder again.
  Samples ScoreOutputs(const Encoded& encoded, const torch::Tensor& decoder_outputs,
                       const std::vector<std::vector<int32_t>>& devices);

  // The log-probability (and entropy) of given placements under the policy,
  // differentiable: what REINFORCE needs.
  Samples Score(const std::vector<std::vector<int32_t>>& devices);

  int64_t num_groups() const { return num_groups_; }
  int64_t num_devices() const { return num_devices_; }

 private:
  // Device logits from decoder outputs `query` [K, T, decoder] and their
  // attention over the groups, for groups `first`..`first`+T-1, whose
  // previous choices are `previous` [K, T] (num_devices: the start token).
  torch::Tensor Logits(const Encoded& encoded, const torch::Tensor& query, int64_t first, const torch::Tensor& previous);

  int64_t num_groups_;
  int64_t num_devices_;
  Seq2SeqOptions options_;
  torch::Tensor type_ids_;       // [G] int64
  torch::Tensor static_inputs_;  // [G, shapes + 2G adjacency] float
  torch::Tensor allowed_;        // [G, D] bool

  torch::nn::Embedding type_embedding_{nullptr};
  torch::nn::LSTM encoder_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};  // D devices + a start token
  torch::nn::Linear decoder_init_{nullptr};
  torch::nn::LSTM decoder_{nullptr};
  torch::nn::Linear attention_encoder_{nullptr};
  torch::nn::Linear attention_decoder_{nullptr};
  torch::nn::Linear attention_score_{nullptr};
  torch::nn::Linear output_{nullptr};
  torch::Tensor stay_bias_;  // scalar, learned
};
TORCH_MODULE(Seq2SeqNet);

}  // namespace devplace
