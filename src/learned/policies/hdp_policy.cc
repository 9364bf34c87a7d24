#include "learned/policies/hdp_policy.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "learned/networks/attention.h"
#include "learned/features/op_features.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

// The paper's type embedding is 20 wide; the device embedding and the
// attention width are the 2017 policy's (learned/networks/seq2seq_net.h).
constexpr int64_t kTypeEmbedding = 20;
constexpr int64_t kDeviceEmbedding = 32;
constexpr int64_t kAttentionHidden = 32;

torch::Tensor IndexTensor(const std::vector<int32_t>& values) {
  return torch::tensor(std::vector<int64_t>(values.begin(), values.end()), torch::kInt64);
}

torch::Tensor FloatTensor(const std::vector<float>& values, std::vector<int64_t> shape) {
  return torch::tensor(values, torch::kFloat32).view(shape);
}

// Throws Error unless `d` is a group in 0..N-1 for each of U units, then a
// device in 0..D-1 for each of N groups.
void CheckDecision(const Decision& d, int64_t U, int64_t N, int64_t D) {
  if (static_cast<int64_t>(d.size()) != U + N) {
    throw Error("an HDP decision has " + std::to_string(d.size()) + " numbers, expected " + std::to_string(U + N) +
                " (a group per unit, then a device per group)");
  }
  for (int64_t i = 0; i < U + N; ++i) {
    const int64_t limit = i < U ? N : D;
    if (d[i] < 0 || d[i] >= limit) {
      throw Error("an HDP decision has " + std::to_string(d[i]) + " at position " + std::to_string(i) + ", outside 0.." +
                  std::to_string(limit - 1) + (i < U ? " (groups)" : " (devices)"));
    }
  }
}

// The Grouper and the Placer, one module so that the optimiser, checkpoints
// and copies between controllers see every parameter.
class HdpNetImpl : public torch::nn::Module {
 public:
  HdpNetImpl(const OpFeatures& f, int64_t groups, int64_t devices, const LearnedOptions& options)
      : units_(f.num_units), groups_(groups), devices_(devices), types_(f.num_types()), options_(options) {
    unit_type_ = IndexTensor(f.unit_type);
    unit_static_ = torch::cat({FloatTensor(f.shape_features, {units_, OpFeatures::kShapeFeatures}),
                               FloatTensor(f.adjacency, {units_, OpFeatures::kAdjacencyFeatures})},
                              1);
    unit_of_op_ = IndexTensor(f.unit_of_op);
    op_type_ = IndexTensor(f.op_type);
    unit_bytes_ = torch::tensor(f.unit_output_bytes, torch::kFloat32);
    edge_src_ = IndexTensor(f.edge_src);
    edge_dst_ = IndexTensor(f.edge_dst);
    edge_count_ = torch::tensor(f.edge_count, torch::kFloat32);
    // In units of groups, from the middle of each group's stretch: [U, 1] and [1, N].
    unit_slot_ = torch::tensor(f.unit_position, torch::kFloat32).mul(static_cast<float>(groups)).unsqueeze(1);
    group_middle_ = torch::arange(groups, torch::kFloat32).add(0.5f).unsqueeze(0);

    const int64_t unit_width = kTypeEmbedding + OpFeatures::kShapeFeatures + OpFeatures::kAdjacencyFeatures;
    type_embedding_ = register_module("type_embedding", torch::nn::Embedding(types_, kTypeEmbedding));
    grouper_hidden_ = register_module("grouper_hidden", torch::nn::Linear(unit_width, options.hdp.grouper_hidden));
    grouper_output_ = register_module("grouper_output", torch::nn::Linear(options.hdp.grouper_hidden, groups_));

    const int64_t E = options.seq2seq.encoder_hidden, H = options.seq2seq.decoder_hidden;
    encoder_ = register_module("encoder", torch::nn::LSTM(torch::nn::LSTMOptions(group_width(), E).batch_first(true).bidirectional(true)));
    device_embedding_ = register_module("device_embedding", torch::nn::Embedding(devices_ + 1, kDeviceEmbedding));
    decoder_init_ = register_module("decoder_init", torch::nn::Linear(2 * E, H));
    decoder_ = register_module("decoder", torch::nn::LSTM(torch::nn::LSTMOptions(kDeviceEmbedding, H).batch_first(true)));
    attention_encoder_ = register_module("attention_encoder", torch::nn::Linear(torch::nn::LinearOptions(2 * E, kAttentionHidden).bias(false)));
    attention_decoder_ = register_module("attention_decoder", torch::nn::Linear(H, kAttentionHidden));
    attention_score_ = register_module("attention_score", torch::nn::Linear(torch::nn::LinearOptions(kAttentionHidden, 1).bias(false)));
    output_ = register_module("output", torch::nn::Linear(H + 2 * E, devices_));
    // The Placer starts uniform, as the 2017 policy does: a random output
    // layer scaled by tanh_constant would favour arbitrary devices from the
    // first sample. The Grouper keeps its random start: its logits are small
    // (near uniform) but already depend on the features, so the first
    // groupings are not all alike.
    torch::NoGradGuard no_grad;
    output_->weight.zero_();
    output_->bias.zero_();
    const double stay_bias = options.seq2seq.stay_bias.value_or(HdpStayBias(groups, devices));
    stay_bias_ = register_parameter("stay_bias", torch::tensor(static_cast<float>(stay_bias)));
    // With the locality prior, the Grouper's network starts silent so the
    // prior alone shapes the first groupings; it learns what to change.
    locality_ = register_parameter("grouper_locality", torch::tensor(static_cast<float>(options.hdp.grouper_locality)));
    if (options.hdp.grouper_locality > 0) {
      grouper_output_->weight.zero_();
      grouper_output_->bias.zero_();
    }
    // No slow devices, no penalty, until the policy says which are fast.
    slow_penalty_ = register_parameter("slow_device_penalty", torch::zeros({}));
    slow_mask_ = torch::zeros({devices});
  }

  int64_t units() const { return units_; }
  int64_t groups() const { return groups_; }
  std::vector<torch::Tensor> priors() const { return {stay_bias_, locality_, slow_penalty_}; }
  void set_stay_bias(double value) {
    torch::NoGradGuard no_grad;
    stay_bias_.fill_(value);
  }
  // Devices outside `fast` become slow: their logits carry the slow-device
  // penalty (0 until set_slow_device_penalty).
  void set_fast_devices(const std::vector<int32_t>& fast) {
    slow_mask_ = torch::ones({devices_});
    for (int32_t d : fast) slow_mask_[d] = 0.0f;
  }
  void set_slow_device_penalty(double value) {
    torch::NoGradGuard no_grad;
    slow_penalty_.fill_(value);
  }
  int64_t devices() const { return devices_; }
  // Per group: its out-edge and in-edge counts to every group, its op-type
  // mix, its share of the output bytes.
  int64_t group_width() const { return 2 * groups_ + types_ + 1; }

  // [U, N]: the Grouper's logits, tanh-scaled.
  torch::Tensor GrouperLogits() {
    torch::Tensor x = torch::cat({type_embedding_(unit_type_), unit_static_}, 1);
    torch::Tensor logits = Squash(grouper_output_(torch::tanh(grouper_hidden_(x))));
    // The weight is learned but never below 0: a negative one sends every
    // unit to the group farthest from its place (squared distances in the
    // hundreds of groups), which once collapsed a million-op run's
    // groupings in one update (BENCHMARKS.md). At 0 the prior is off, as
    // the paper's Grouper, and stays off.
    if (options_.hdp.grouper_locality > 0) logits = logits - locality_.clamp_min(0) * (unit_slot_ - group_middle_).square();
    return logits;
  }

  // [K, N, group_width()] from groupings [K, U]: sparse sums over the unit
  // edge list, the ops and the units (index_add), no U x U anything.
  torch::Tensor GroupEmbedding(const torch::Tensor& grouping) {
    torch::NoGradGuard no_grad;
    const int64_t K = grouping.size(0), N = groups_, T = types_;
    torch::Tensor base = torch::arange(K, torch::kInt64).unsqueeze(1) * N;  // [K, 1]: sample k's first group slot

    torch::Tensor src = grouping.index_select(1, edge_src_) + base;  // [K, E]
    torch::Tensor dst = grouping.index_select(1, edge_dst_);
    torch::Tensor edges = torch::zeros({K * N * N}).index_add_(0, (src * N + dst).reshape(-1), edge_count_.repeat({K}));
    edges = edges.view({K, N, N});
    edges = edges / edges.flatten(1).amax(1).clamp_min(1).view({K, 1, 1});

    torch::Tensor op_group = grouping.index_select(1, unit_of_op_) + base;  // [K, ops]
    torch::Tensor type_slot = (op_group * T + op_type_.unsqueeze(0)).reshape(-1);
    torch::Tensor type_mix = torch::zeros({K * N * T}).index_add_(0, type_slot, torch::ones({type_slot.size(0)})).view({K, N, T});
    type_mix = type_mix / type_mix.sum(2, true).clamp_min(1);

    torch::Tensor bytes = torch::zeros({K * N}).index_add_(0, (grouping + base).reshape(-1), unit_bytes_.repeat({K})).view({K, N});
    bytes = bytes / bytes.amax(1, true).clamp_min(1);

    return torch::cat({edges, edges.transpose(1, 2), type_mix, bytes.unsqueeze(2)}, 2);
  }

  struct Encoded {
    torch::Tensor values;  // [K, N, 2E]
    torch::Tensor keys;    // [K, N, A]
    torch::Tensor h0, c0;  // [K, decoder]
  };

  Encoded EncodeGroups(const torch::Tensor& embedding) {
    Encoded e;
    e.values = std::get<0>(encoder_->forward(embedding));
    e.keys = attention_encoder_(e.values);
    e.h0 = torch::tanh(decoder_init_(e.values.mean(1)));
    e.c0 = torch::zeros_like(e.h0);
    return e;
  }

  // [K, T, D]: device logits for decoder outputs `query` [K, T, decoder]
  // whose previous devices are `previous` [K, T] (D: the start token).
  torch::Tensor PlacerLogits(const Encoded& e, const torch::Tensor& query, const torch::Tensor& previous) {
    torch::Tensor context = AttentionContext(e.keys, e.values, attention_decoder_(query), attention_score_->weight.view({-1}));
    torch::Tensor logits = Squash(output_(torch::cat({query, context}, 2)));
    torch::Tensor was_previous = torch::one_hot(previous, devices_ + 1).narrow(2, 0, devices_).to(torch::kFloat);
    return logits + stay_bias_ * was_previous - slow_penalty_ * slow_mask_;
  }

  struct Placed {
    torch::Tensor devices;  // [K, N] int64
    torch::Tensor log_prob, entropy;
  };

  // Step by step: each group's device is fed to the next step. No
  // gradient, except with `decoder_outputs`: then the decoder's steps run
  // with gradients from `e`'s first state and their outputs [K, N, decoder]
  // go there (for ScoreOutputs).
  Placed SamplePlacement(const Encoded& e, torch::Generator& generator, double noise_std, bool greedy,
                         torch::Tensor* decoder_outputs = nullptr) {
    const bool keep = decoder_outputs != nullptr;
    const int64_t K = e.h0.size(0);
    auto weights = decoder_->named_parameters();
    torch::Tensor h = keep ? e.h0 : e.h0.detach(), c = keep ? e.c0 : e.c0.detach();
    const Encoded fixed{e.values.detach(), e.keys.detach(), e.h0.detach(), e.c0.detach()};
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> outputs;
    torch::Tensor previous = torch::full({K}, devices_, torch::kInt64);
    Placed out{torch::empty({K, groups_}, torch::kInt64), torch::zeros({K}), torch::zeros({K})};
    for (int64_t g = 0; g < groups_; ++g) {
      ThrowIfStopRequested();  // a stop drops the samples drawn so far
      {
        torch::AutoGradMode grad(keep);
        std::tie(h, c) = torch::lstm_cell(device_embedding_(previous), {h, c}, weights["weight_ih_l0"], weights["weight_hh_l0"],
                                          weights["bias_ih_l0"], weights["bias_hh_l0"]);
        if (keep) outputs.push_back(h);
      }
      torch::Tensor logits = PlacerLogits(fixed, h.detach().unsqueeze(1), previous.unsqueeze(1)).squeeze(1);  // [K, D]
      if (noise_std > 0) logits = logits + torch::randn(logits.sizes(), generator) * noise_std;
      torch::Tensor log_probs = torch::log_softmax(logits, 1);
      torch::Tensor choice = greedy ? log_probs.argmax(1) : torch::multinomial(log_probs.exp(), 1, true, generator).squeeze(1);
      out.log_prob += log_probs.gather(1, choice.unsqueeze(1)).squeeze(1);
      out.entropy -= (log_probs.exp() * log_probs).sum(1);
      out.devices.select(1, g).copy_(choice);
      previous = choice;
    }
    if (keep) {
      torch::AutoGradMode grad(true);
      *decoder_outputs = torch::stack(outputs, 1);
    }
    return out;
  }

  // Teacher-forced: the decoder runs over the whole sequence at once.
  Placed ScorePlacement(const Encoded& e, const torch::Tensor& devices) {
    const torch::Tensor previous = PreviousDevices(devices);
    auto state = std::make_tuple(e.h0.unsqueeze(0).contiguous(), e.c0.unsqueeze(0).contiguous());
    torch::Tensor outputs = std::get<0>(decoder_->forward(device_embedding_(previous), state));  // [K, N, decoder]
    return ScoreOutputs(e, outputs, devices);
  }

  // ScorePlacement given the decoder's outputs for `devices` (as
  // SamplePlacement kept them).
  Placed ScoreOutputs(const Encoded& e, const torch::Tensor& decoder_outputs, const torch::Tensor& devices) {
    const torch::Tensor previous = PreviousDevices(devices);
    torch::Tensor log_probs = torch::log_softmax(PlacerLogits(e, decoder_outputs, previous), 2);
    return {devices, log_probs.gather(2, devices.unsqueeze(2)).squeeze(2).sum(1), -(log_probs.exp() * log_probs).sum({1, 2})};
  }

 private:
  // [K, N]: what each step of the decoder is fed, the device before (D: the start token).
  torch::Tensor PreviousDevices(const torch::Tensor& devices) const {
    const int64_t K = devices.size(0);
    return torch::cat({torch::full({K, 1}, devices_, torch::kInt64), devices.narrow(1, 0, groups_ - 1)}, 1);
  }

  torch::Tensor Squash(const torch::Tensor& logits) const {
    return options_.tanh_constant * torch::tanh(logits / options_.temperature);
  }

  int64_t units_, groups_, devices_, types_;
  LearnedOptions options_;
  torch::Tensor unit_type_, unit_static_, unit_of_op_, op_type_, unit_bytes_, edge_src_, edge_dst_, edge_count_;
  torch::Tensor unit_slot_, group_middle_;  // the locality prior's positions

  torch::nn::Embedding type_embedding_{nullptr};
  torch::nn::Linear grouper_hidden_{nullptr}, grouper_output_{nullptr};
  torch::nn::LSTM encoder_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};  // D devices + a start token
  torch::nn::Linear decoder_init_{nullptr};
  torch::nn::LSTM decoder_{nullptr};
  torch::nn::Linear attention_encoder_{nullptr}, attention_decoder_{nullptr}, attention_score_{nullptr};
  torch::nn::Linear output_{nullptr};
  torch::Tensor stay_bias_;
  torch::Tensor locality_;  // the locality prior's weight
  torch::Tensor slow_penalty_;  // learned, subtracted from the slow devices' logits
  torch::Tensor slow_mask_;     // [D]: 1 for a slow device
};
TORCH_MODULE(HdpNet);

// The Grouper runs once per pass, with gradients; sampling reads it
// detached, scoring differentiates through it. The Placer's encoder depends
// on the grouping, so it runs per call.
class HdpPass : public PolicyPass, public HdpPassParts {
 public:
  HdpPass(HdpNet net, const LearnedOptions& options)
      : net_(std::move(net)), options_(options), grouper_logits_(net_->GrouperLogits()) {}

  PolicySamples Sample(int64_t count, torch::Generator& generator, const SampleOptions& options) override {
    kept_ = Kept();
    torch::NoGradGuard no_grad;
    const bool noisy = options_.hdp.grouper_noise_std > 0 && options.step < options_.hdp.grouper_noise_steps;
    // The Placer's encoding and decoder states depend only on the groups and
    // devices chosen, so they are the scoring's even when logits were noisy.
    const bool keep = options.will_score;
    torch::Tensor grouping;  // [K, U]
    torch::Tensor entropy;
    if (!noisy) {
      torch::Tensor log_probs = torch::log_softmax(grouper_logits_.detach(), 1);
      // One draw of K groups per unit: every sample's grouping in one call.
      torch::Tensor chosen = options.greedy ? log_probs.argmax(1, true).expand({net_->units(), count})
                                            : torch::multinomial(log_probs.exp(), count, true, generator);  // [U, K]
      parts_.grouping = log_probs.gather(1, chosen).sum(0);
      entropy = (-(log_probs.exp() * log_probs).sum()).expand({count}).clone();
      grouping = chosen.t().contiguous();
    } else {
      // Each sample's logits get their own noise, so each is drawn alone.
      std::vector<torch::Tensor> chosen, log_prob, entropies;
      for (int64_t k = 0; k < count; ++k) {
        torch::Tensor logits = grouper_logits_.detach();
        logits = logits + torch::randn(logits.sizes(), generator) * options_.hdp.grouper_noise_std;
        torch::Tensor log_probs = torch::log_softmax(logits, 1);
        torch::Tensor c = options.greedy ? log_probs.argmax(1, true) : torch::multinomial(log_probs.exp(), 1, true, generator);
        log_prob.push_back(log_probs.gather(1, c).sum());
        entropies.push_back(-(log_probs.exp() * log_probs).sum());
        chosen.push_back(c.squeeze(1));
      }
      grouping = torch::stack(chosen, 0);
      parts_.grouping = torch::stack(log_prob);
      entropy = torch::stack(entropies);
    }
    HdpNetImpl::Placed placed;
    if (keep) {
      // The Placer's encoder and decoder run with gradients here, once, and
      // Score reads them.
      torch::AutoGradMode grad(true);
      kept_.encoded = net_->EncodeGroups(net_->GroupEmbedding(grouping));
      placed = net_->SamplePlacement(kept_.encoded, generator, options.logit_noise_std, options.greedy, &kept_.decoder_outputs);
    } else {
      placed = net_->SamplePlacement(net_->EncodeGroups(net_->GroupEmbedding(grouping)), generator, options.logit_noise_std,
                                     options.greedy);
    }
    parts_.placement = placed.log_prob;

    PolicySamples out;
    out.decisions = ToDecisions(grouping, placed.devices);
    if (keep) kept_.decisions = out.decisions;
    out.log_prob = parts_.grouping + parts_.placement;
    out.entropy = entropy + placed.entropy;
    return out;
  }

  PolicySamples Score(const std::vector<Decision>& decisions) override {
    const int64_t U = net_->units(), N = net_->groups(), K = static_cast<int64_t>(decisions.size());
    std::vector<int64_t> flat;
    flat.reserve(K * (U + N));
    for (const Decision& d : decisions) {
      CheckDecision(d, U, N, net_->devices());
      flat.insert(flat.end(), d.begin(), d.end());
    }
    torch::Tensor all = torch::tensor(flat, torch::kInt64).view({K, U + N});
    torch::Tensor grouping = all.narrow(1, 0, U).contiguous();
    torch::Tensor devices = all.narrow(1, U, N).contiguous();

    torch::Tensor log_probs = torch::log_softmax(grouper_logits_, 1);  // [U, N]
    parts_.grouping = log_probs.gather(1, grouping.t()).sum(0);
    torch::Tensor grouping_entropy = (-(log_probs.exp() * log_probs).sum()).expand({K});
    // The first Score of sampled decisions reads what sampling kept (its
    // graph is backpropagated once); any other encodes and decodes afresh.
    Kept kept = std::move(kept_);
    kept_ = Kept();
    const std::vector<int64_t> rows = kept.decoder_outputs.defined() ? RowsOfSampled(decisions, kept.decisions) : std::vector<int64_t>();
    HdpNetImpl::Placed placed;
    if (!rows.empty()) {
      const torch::Tensor r = torch::tensor(rows, torch::kInt64);
      const HdpNetImpl::Encoded& e = kept.encoded;
      placed = net_->ScoreOutputs({e.values.index_select(0, r), e.keys.index_select(0, r), e.h0.index_select(0, r), e.c0.index_select(0, r)},
                                  kept.decoder_outputs.index_select(0, r), devices);
    } else {
      placed = net_->ScorePlacement(net_->EncodeGroups(net_->GroupEmbedding(grouping)), devices);
    }
    parts_.placement = placed.log_prob;

    PolicySamples out;
    out.decisions = decisions;
    out.log_prob = parts_.grouping + parts_.placement;
    out.entropy = grouping_entropy + placed.entropy;
    return out;
  }

  const HdpLogProbs& last_parts() const override { return parts_; }

 private:
  static std::vector<Decision> ToDecisions(const torch::Tensor& grouping, const torch::Tensor& devices) {
    torch::Tensor all = torch::cat({grouping, devices}, 1).to(torch::kInt32).contiguous();
    const int64_t K = all.size(0), width = all.size(1);
    const int32_t* data = all.data_ptr<int32_t>();
    std::vector<Decision> out(K);
    for (int64_t k = 0; k < K; ++k) out[k].assign(data + k * width, data + (k + 1) * width);
    return out;
  }

  // What Sample kept for Score, with gradients.
  struct Kept {
    HdpNetImpl::Encoded encoded;   // the Placer's encoding of each sample's groups
    torch::Tensor decoder_outputs;  // [K, N, decoder]
    std::vector<Decision> decisions;
  };

  HdpNet net_;
  LearnedOptions options_;
  torch::Tensor grouper_logits_;  // [U, N]
  HdpLogProbs parts_;
  Kept kept_;
};

class HdpPolicy : public Policy {
 public:
  HdpPolicy(std::shared_ptr<const OpFeatures> features, const Cluster& cluster, int64_t groups, const LearnedOptions& options)
      : features_(std::move(features)),
        groups_(groups),
        options_(options),
        net_(*features_, groups, cluster.num_devices(), options) {
    device_kind_.reserve(cluster.num_devices());
    for (const Device& d : cluster.devices) device_kind_.push_back(MaskOf(d.kind));
    // The start probes spread stretches over the fast devices (at least half
    // the fastest one's peak): over a host CPU as well, every probe would
    // mostly measure the CPU's share, whatever its run length.
    double fastest = 0;
    for (const Device& d : cluster.devices) fastest = std::max(fastest, d.peak_flops_per_s);
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (cluster.devices[d].peak_flops_per_s >= 0.5 * fastest) probe_devices_.push_back(d);
    }
    if (probe_devices_.size() < 2) {
      probe_devices_.resize(cluster.num_devices());
      for (int32_t d = 0; d < cluster.num_devices(); ++d) probe_devices_[d] = d;
    }
    net_->set_fast_devices(probe_devices_);
    if (options.hdp.slow_device_penalty) net_->set_slow_device_penalty(*options.hdp.slow_device_penalty);
    // Soft placement: a unit its group's device cannot run goes to the
    // first device that can (features_ made sure there is one).
    fallback_.resize(features_->num_units);
    for (int32_t u = 0; u < features_->num_units; ++u) {
      fallback_[u] = static_cast<int32_t>(std::find_if(device_kind_.begin(), device_kind_.end(),
                                                       [&](DeviceKindMask kind) { return (kind & features_->unit_kinds[u]) != 0; }) -
                                          device_kind_.begin());
    }
  }

  std::unique_ptr<PolicyPass> Begin() override { return std::make_unique<HdpPass>(net_, options_); }

  Placement ToPlacement(const Decision& decision) const override {
    const int32_t U = features_->num_units;
    const int32_t D = static_cast<int32_t>(device_kind_.size());
    CheckDecision(decision, U, groups_, D);
    std::vector<int32_t> unit_device(U);
    for (int32_t u = 0; u < U; ++u) {
      const int32_t device = decision[U + decision[u]];
      unit_device[u] = (device_kind_[device] & features_->unit_kinds[u]) ? device : fallback_[u];
    }
    Placement placement(features_->num_ops);
    for (int32_t op = 0; op < features_->num_ops; ++op) placement[op] = unit_device[features_->unit_of_op[op]];
    return placement;
  }

  // Group d holds the units whose ops mostly sit on device d (d modulo N
  // when there are fewer groups than devices), and group g goes to device
  // g (modulo D).
  Decision Imitate(const Placement& placement) const override {
    const int32_t U = features_->num_units;
    const int32_t D = static_cast<int32_t>(device_kind_.size());
    if (static_cast<int32_t>(placement.size()) != features_->num_ops) {
      throw Error("a placement of " + std::to_string(placement.size()) + " ops cannot be imitated on a graph of " +
                  std::to_string(features_->num_ops));
    }
    Decision decision(U + groups_);
    std::vector<int32_t> count(D);
    for (int32_t u = 0; u < U; ++u) {
      std::fill(count.begin(), count.end(), 0);
      for (int32_t i = features_->unit_op_offsets[u]; i < features_->unit_op_offsets[u + 1]; ++i) {
        const int32_t device = placement[features_->unit_ops[i]];
        if (device >= 0 && device < D) ++count[device];
      }
      const int32_t device = static_cast<int32_t>(std::max_element(count.begin(), count.end()) - count.begin());
      decision[u] = static_cast<int32_t>(device % groups_);
    }
    for (int64_t g = 0; g < groups_; ++g) decision[U + g] = static_cast<int32_t>(g % D);
    return decision;
  }

  torch::nn::Module& module() override { return *net_; }
  std::vector<torch::Tensor> prior_parameters() override { return net_->priors(); }

  std::unique_ptr<Policy> MakeSibling() const override {
    return std::unique_ptr<Policy>(new HdpPolicy(features_, device_kind_, groups_, options_, fallback_, probe_devices_));
  }

  // With no --stay-bias, the start is measured rather than assumed: the
  // locality prior's own grouping (unit u in group floor(N position(u)))
  // placed in runs of L groups per device, round robin over the fast
  // devices, for each L of HdpProbeRunLengths. An unrolled network runs
  // fastest as a few long stretches (its layers overlap in time); a network
  // of parallel branches, alternating between neighbouring stretches.
  std::vector<Decision> StartProbes() const override {
    if (options_.seq2seq.stay_bias.has_value() || probe_devices_.size() < 2) return {};
    const int32_t U = features_->num_units;
    Decision grouped(U + groups_);
    for (int32_t u = 0; u < U; ++u) {
      const double slot = std::floor(static_cast<double>(features_->unit_position[u]) * static_cast<double>(groups_));
      grouped[u] = static_cast<int32_t>(std::clamp<double>(slot, 0, static_cast<double>(groups_ - 1)));
    }
    std::vector<Decision> probes;
    const int64_t P = static_cast<int64_t>(probe_devices_.size());
    for (double run : probe_runs()) {
      Decision d = grouped;
      for (int64_t g = 0; g < groups_; ++g) d[U + g] = probe_devices_[static_cast<int64_t>(std::floor(g / run)) % P];
      probes.push_back(std::move(d));
    }
    return probes;
  }

  // The stay bonus of the fastest probe's run length; on a tie, the longer
  // run (the order of HdpProbeRunLengths). Unchanged (runs of N / D) when a
  // probe runs out of memory: then memory rather than run length tells them
  // apart (the large RNNLM fits the GPUs at some run lengths only).
  void ChooseStart(const std::vector<double>& step_times_s) override {
    const std::vector<double> runs = probe_runs();
    if (step_times_s.size() != runs.size()) {
      throw Error("HDP's start: " + std::to_string(step_times_s.size()) + " probe times for " + std::to_string(runs.size()) + " probes");
    }
    // A probe that ran held the whole graph on the fast devices: the slow
    // ones (the K80 and P100 presets' host CPU) start disfavoured, else a
    // fifth of the first placements' groups land on them, and a policy
    // whose fast placements often run out of memory learns the safe slow
    // device rather than how to spread memory over the fast ones.
    const int32_t fast = static_cast<int32_t>(probe_devices_.size());
    const int32_t slow = static_cast<int32_t>(device_kind_.size()) - fast;
    if (slow > 0 && !options_.hdp.slow_device_penalty.has_value() && std::any_of(step_times_s.begin(), step_times_s.end(), [](double t) { return std::isfinite(t); })) {
      net_->set_slow_device_penalty(HdpSlowDevicePenalty(groups_, fast, slow));
    }
    // A probe out of memory: memory, not run length, tells placements of
    // this graph apart, and the start stays at runs of N / D. Probes that
    // failed by chance (NaN) are left out.
    if (std::any_of(step_times_s.begin(), step_times_s.end(), [](double t) { return std::isinf(t); })) return;
    size_t best = runs.size();
    for (size_t i = 0; i < runs.size(); ++i) {
      if (!std::isnan(step_times_s[i]) && (best == runs.size() || step_times_s[i] < step_times_s[best])) best = i;
    }
    if (best == runs.size()) return;
    // Runs are capped at N / D: the Placer spreads over all D devices, and
    // longer runs would leave some of them out from the start.
    const int32_t D = static_cast<int32_t>(device_kind_.size());
    net_->set_stay_bias(HdpStayBiasForRuns(std::min(runs[best], static_cast<double>(groups_) / D), D));
  }

  int64_t num_units() const override { return features_->num_units; }

 private:
  HdpPolicy(std::shared_ptr<const OpFeatures> features, std::vector<DeviceKindMask> device_kind, int64_t groups,
            const LearnedOptions& options, std::vector<int32_t> fallback, std::vector<int32_t> probe_devices)
      : features_(std::move(features)),
        groups_(groups),
        options_(options),
        device_kind_(std::move(device_kind)),
        fallback_(std::move(fallback)),
        probe_devices_(std::move(probe_devices)),
        net_(*features_, groups, static_cast<int64_t>(device_kind_.size()), options) {
    net_->set_fast_devices(probe_devices_);
  }

  // From N / P groups (a P-stage split over the P probe devices, each
  // stage its share of the network) down to 1.
  std::vector<double> probe_runs() const { return HdpProbeRunLengths(groups_, static_cast<int32_t>(probe_devices_.size())); }

  std::shared_ptr<const OpFeatures> features_;
  int64_t groups_;
  LearnedOptions options_;
  std::vector<DeviceKindMask> device_kind_;  // [device]: the mask of its kind
  std::vector<int32_t> fallback_;            // [unit]: the first device that can run it
  std::vector<int32_t> probe_devices_;       // the devices the start probes use
  HdpNet net_;
};

}  // namespace

int64_t HdpGroupCount(const LearnedOptions& options, int32_t num_devices, int64_t num_units) {
  if (options.hdp.groups > 0) return options.hdp.groups;
  // The paper's rule, but never more groups than units (empty groups only
  // lengthen the Placer's decoding), nor fewer than devices (every device
  // stays reachable, and Imitate stays exact).
  const int64_t paper = std::min<int64_t>(256, 20 * int64_t{num_devices});
  return std::min(paper, std::max<int64_t>(num_units, num_devices));
}

double HdpStayBiasForRuns(double run_groups, int32_t num_devices) {
  if (num_devices < 2 || !(run_groups > 1)) return 0;
  return std::log(std::max(1.0, (run_groups - 1) * (num_devices - 1)));
}

double HdpStayBias(int64_t groups, int32_t num_devices) {
  if (num_devices < 2) return 0;
  return HdpStayBiasForRuns(static_cast<double>(groups) / num_devices, num_devices);
}

double HdpSlowDevicePenalty(int64_t groups, int32_t num_fast, int32_t num_slow) {
  if (num_fast < 1 || num_slow < 1 || groups < 2) return 0;
  return std::log(std::max(1.0, static_cast<double>(num_slow) * static_cast<double>(groups - 1) / num_fast));
}

std::vector<double> HdpProbeRunLengths(int64_t groups, int32_t num_probe_devices) {
  std::vector<double> out;
  for (double run = static_cast<double>(groups) / std::max(1, num_probe_devices); run >= 2; run /= 2) out.push_back(run);
  out.push_back(1);
  return out;
}

std::unique_ptr<Policy> MakeHdpPolicy(const PlacementProblem& problem, const LearnedOptions& options) {
  ValidateLearnedOptions(options);
  if (problem.graph.num_ops() == 0) throw Error("graph '" + ForMessage(problem.graph.name) + "' has no ops to place");
  if (problem.cluster.num_devices() == 0) throw Error("cluster '" + ForMessage(problem.cluster.name) + "' has no devices");
  auto features = std::make_shared<const OpFeatures>(BuildOpFeatures(problem.graph, problem.cluster));
  return std::make_unique<HdpPolicy>(std::move(features), problem.cluster,
                                     HdpGroupCount(options, problem.cluster.num_devices(), features->num_units), options);
}

}  // namespace devplace
