// Mars's placer (Lan et al. 2021): the graph encoder of learned/networks/mars_encoder.h
// (pre-trained by `devplace pretrain`, or fresh), then a segment-level
// sequence-to-sequence network that gives every co-location unit a device,
// in topological order (units are numbered so).
//
// An LSTM encoder reads the units' embeddings; an LSTM decoder emits one
// device per unit, fed the device it chose for the unit before and the
// encoder's output for this unit, and attends over the encoder outputs of
// the unit's segment (`segment` consecutive units) only: both LSTMs carry
// their state from one segment to the next, so a long graph never needs
// one attention over every unit (memory and time grow with units x segment,
// not units squared). Attention is scaled dot product (ours: the paper does
// not say; additive attention would hold a [samples, units, segment, width]
// tensor). As in the 2017 policy, the attention context does not feed back
// into the decoder, so scoring given decisions runs the decoder over the
// whole sequence at once; only sampling goes unit by unit. Both use the same
// modules and the same formula, so they agree on every probability.
//
// Logits are C tanh(x / T), plus a learned bonus on each unit's start device
// (learned/policies/unit_decisions.h), masked to the devices a unit may run on.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "learned/networks/gdp_net.h"
#include "learned/networks/mars_encoder.h"
#include "learned/files/policy_file_facts.h"

namespace devplace {

struct MarsPlacerArchitecture {
  int64_t hidden = 64;   // both LSTMs' width
  int64_t segment = 64;  // units per attention segment
  int64_t devices = 0;
};

class MarsNetImpl : public torch::nn::Module {
 public:
  MarsNetImpl(MarsEncoder encoder, const MarsPlacerArchitecture& architecture, double start_bias);

  // The encoder's and the LSTM encoder's reading of one graph. With
  // `encoder_frozen`, the graph encoder runs without gradient.
  struct Encoded {
    torch::Tensor values;  // [U, hidden]: the LSTM encoder's outputs
    torch::Tensor keys;    // [U, hidden]: what attention compares against
    torch::Tensor h0, c0;  // [1, hidden]: the decoder's first state
    Encoded detach() const { return {values.detach(), keys.detach(), h0.detach(), c0.detach()}; }
  };
  Encoded Encode(const UnitInputs& inputs, bool encoder_frozen);

  struct Scored {
    torch::Tensor log_prob;  // [K]
    torch::Tensor entropy;   // [K], summed over units
  };
  // Teacher forcing: chosen [K, U] int64. start, allowed: [U, D] (one-hot
  // float, bool).
  Scored Score(const Encoded& encoded, const torch::Tensor& chosen, const torch::Tensor& start, const torch::Tensor& allowed,
               double tanh_constant, double temperature);
  // Score given the decoder's outputs h [K, U, hidden] for `chosen` (as
  // Sample keeps them): the same without running the decoder again.
  Scored ScoreOutputs(const Encoded& encoded, const torch::Tensor& h, const torch::Tensor& chosen, const torch::Tensor& start,
                      const torch::Tensor& allowed, double tanh_constant, double temperature);

  struct Sampled {
    torch::Tensor chosen;    // [K, U] int64
    torch::Tensor log_prob;  // [K]
    torch::Tensor entropy;   // [K]
  };
  // Unit by unit; `logit_noise_std` > 0 draws from noisy logits (the
  // log-probabilities stay the policy's own); `greedy` takes the most likely.
  // No gradient, except with `decoder_outputs`: then the decoder's steps run
  // with gradients from `encoded` and their outputs [K, U, hidden] go there
  // (for ScoreOutputs).
  Sampled Sample(const Encoded& encoded, int64_t count, torch::Generator& generator, const torch::Tensor& start,
                 const torch::Tensor& allowed, double tanh_constant, double temperature, double logit_noise_std, bool greedy,
                 torch::Tensor* decoder_outputs = nullptr);

  MarsEncoder& encoder() { return encoder_; }
  const MarsEncoder& encoder() const { return encoder_; }
  const MarsPlacerArchitecture& architecture() const { return architecture_; }
  torch::Tensor start_bias() const { return start_bias_; }
  // Replaces the learned start bonus (a loaded policy given --start-bias).
  void set_start_bias(double value);
  // The placer's own parameters (everything but the graph encoder's).
  std::vector<torch::Tensor> placer_parameters() const;

 private:
  // [K, T, D] log-probabilities of units first..first+T-1 from decoder
  // outputs h [K, T, hidden] and attention contexts [K, T, hidden].
  torch::Tensor LogProbs(const torch::Tensor& h, const torch::Tensor& context, int64_t first, const torch::Tensor& start,
                         const torch::Tensor& allowed, double tanh_constant, double temperature);

  MarsPlacerArchitecture architecture_;
  MarsEncoder encoder_{nullptr};
  torch::nn::LSTM unit_reader_{nullptr};  // the LSTM encoder
  torch::nn::Embedding device_embedding_{nullptr};  // D devices + a start token
  torch::nn::Linear decoder_init_{nullptr};
  torch::nn::LSTM decoder_{nullptr};
  torch::nn::Linear key_{nullptr}, query_{nullptr};
  torch::nn::Linear output_{nullptr};
  torch::Tensor start_bias_;
};
TORCH_MODULE(MarsNet);

}  // namespace devplace
