#include "learned/policies/seq2seq_policy.h"

#include "graph/group_order.h"
#include "graph/grouping.h"
#include "learned/features/group_features.h"
#include "learned/networks/seq2seq_net.h"
#include "util/error.h"

namespace devplace {
namespace {

// The groups, numbered in the order the policy reads them.
Grouping PolicyGrouping(const Graph& graph, const Cluster& cluster, const std::string& order) {
  Grouping grouping = BuildGrouping(graph, GroupingOptionsFor(cluster));
  if (order == "topological") return grouping;
  if (order != "chain") throw Error("unknown group order '" + ForMessage(order) + "' (chain or topological)");
  return RenumberGroups(grouping, ChainFollowingOrder(grouping));
}

Seq2SeqOptions NetworkOptions(const LearnedOptions& options) {
  Seq2SeqOptions network;
  network.tanh_constant = options.tanh_constant;
  network.temperature = options.temperature;
  network.stay_bias = options.seq2seq.stay_bias_or_default();
  network.encoder_hidden = options.seq2seq.encoder_hidden;
  network.decoder_hidden = options.seq2seq.decoder_hidden;
  return network;
}

// The encoder runs once, with gradients; sampling reads it detached, scoring
// differentiates through it.
class Seq2SeqPass : public PolicyPass {
 public:
  explicit Seq2SeqPass(Seq2SeqNet network) : network_(std::move(network)), encoded_(network_->Encode()) {}

  PolicySamples Sample(int64_t count, torch::Generator& generator, const SampleOptions& options) override {
    kept_outputs_ = torch::Tensor();
    kept_decisions_.clear();
    if (!options.will_score) {
      torch::NoGradGuard no_grad;
      return Convert(network_->Sample(encoded_.detach(), count, generator, options.logit_noise_std, options.greedy));
    }
    // The decoder's states depend only on the devices chosen, so they are
    // the scoring's even when the logits were noisy.
    Seq2SeqNetImpl::Samples samples =
        network_->Sample(encoded_, count, generator, options.logit_noise_std, options.greedy, &kept_outputs_);
    kept_decisions_ = samples.devices;
    return Convert(std::move(samples));
  }

  // The first Score of sampled decisions reads the decoder's states sampling
  // kept (their graph is backpropagated once); any other runs the decoder.
  PolicySamples Score(const std::vector<Decision>& decisions) override {
    if (kept_outputs_.defined()) {
      torch::Tensor outputs = std::move(kept_outputs_);
      kept_outputs_ = torch::Tensor();
      const std::vector<int64_t> rows = RowsOfSampled(decisions, kept_decisions_);
      kept_decisions_.clear();
      if (!rows.empty()) {
        return Convert(network_->ScoreOutputs(encoded_, outputs.index_select(0, torch::tensor(rows, torch::kInt64)), decisions));
      }
    }
    return Convert(network_->Score(encoded_, decisions));
  }

 private:
  static PolicySamples Convert(Seq2SeqNetImpl::Samples samples) {
    return {std::move(samples.devices), samples.log_prob, samples.entropy};
  }

  Seq2SeqNet network_;
  Seq2SeqNetImpl::Encoded encoded_;
  torch::Tensor kept_outputs_;           // [K, G, decoder], with gradients: what Sample kept for Score
  std::vector<Decision> kept_decisions_;  // the decisions they are of
};

class Seq2SeqPlacer : public Policy {
 public:
  Seq2SeqPlacer(std::shared_ptr<const Grouping> grouping, std::shared_ptr<const GroupFeatures> features,
                int32_t num_devices, const Seq2SeqOptions& options)
      : grouping_(std::move(grouping)),
        features_(std::move(features)),
        num_devices_(num_devices),
        options_(options),
        network_(*features_, num_devices, options) {}

  std::unique_ptr<PolicyPass> Begin() override { return std::make_unique<Seq2SeqPass>(network_); }
  Placement ToPlacement(const Decision& decision) const override { return ExpandGroupPlacement(*grouping_, decision); }
  Decision Imitate(const Placement& placement) const override {
    return GroupDevicesFromPlacement(*grouping_, placement, num_devices_);
  }
  torch::nn::Module& module() override { return *network_; }
  std::unique_ptr<Policy> MakeSibling() const override {
    return std::make_unique<Seq2SeqPlacer>(grouping_, features_, num_devices_, options_);
  }
  int64_t num_units() const override { return grouping_->num_groups(); }

 private:
  std::shared_ptr<const Grouping> grouping_;
  std::shared_ptr<const GroupFeatures> features_;
  int32_t num_devices_;
  Seq2SeqOptions options_;
  Seq2SeqNet network_;
};

}  // namespace

std::unique_ptr<Policy> MakeSeq2SeqPolicy(const PlacementProblem& problem, const LearnedOptions& options) {
  auto grouping = std::make_shared<const Grouping>(PolicyGrouping(problem.graph, problem.cluster, options.seq2seq.group_order));
  if (grouping->num_groups() == 0) throw Error("graph '" + ForMessage(problem.graph.name) + "' has no ops to place");
  CheckGroupsCanRun(problem.graph, problem.cluster, *grouping);
  auto features = std::make_shared<const GroupFeatures>(BuildGroupFeatures(problem.graph, *grouping, problem.cluster));
  return std::make_unique<Seq2SeqPlacer>(grouping, features, problem.cluster.num_devices(), NetworkOptions(options));
}

}  // namespace devplace
