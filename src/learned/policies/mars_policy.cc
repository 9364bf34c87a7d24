#include "learned/policies/mars_policy.h"

#include <string>
#include <vector>

#include "learned/networks/mars_encoder.h"
#include "learned/networks/mars_net.h"
#include "learned/policies/unit_policy.h"
#include "util/error.h"
#include "learned/networks/policy_file.h"

namespace devplace {
namespace {

using MarsGraphModule = NetWithStart<MarsNet>;

torch::Tensor DecisionsTensor(const std::vector<Decision>& decisions, int64_t units, int64_t devices) {
  std::vector<int64_t> flat;
  flat.reserve(decisions.size() * units);
  for (const Decision& d : decisions) {
    if (static_cast<int64_t>(d.size()) != units) throw Error("a Mars decision has " + std::to_string(d.size()) + " units, not " + std::to_string(units));
    for (int32_t device : d) {
      if (device < 0 || device >= devices) throw Error("a Mars decision names device " + std::to_string(device) + " of " + std::to_string(devices));
      flat.push_back(device);
    }
  }
  return torch::tensor(flat, torch::kInt64).view({static_cast<int64_t>(decisions.size()), units});
}

class MarsPass : public PolicyPass {
 public:
  MarsPass(MarsGraphModule module, const torch::Tensor& allowed, const UnitInputs& inputs, const LearnedOptions& options)
      : module_(std::move(module)), allowed_(allowed), options_(options) {
    encoded_ = module_->net->Encode(inputs, options.unit.encoder_learning_rate == 0);
  }

  PolicySamples Sample(int64_t count, torch::Generator& generator, const SampleOptions& options) override {
    kept_outputs_ = torch::Tensor();
    kept_decisions_.clear();
    // With will_score the decoder's states are kept for Score (they depend
    // only on the devices chosen, noisy logits or not).
    const MarsNetImpl::Sampled s =
        module_->net->Sample(options.will_score ? encoded_ : encoded_.detach(), count, generator, module_->start, allowed_,
                             options_.tanh_constant, options_.temperature, options.greedy ? 0 : options.logit_noise_std,
                             options.greedy, options.will_score ? &kept_outputs_ : nullptr);
    PolicySamples out;
    const torch::Tensor chosen = s.chosen.to(torch::kInt32).contiguous();
    const int64_t U = chosen.size(1);
    for (int64_t k = 0; k < count; ++k) out.decisions.emplace_back(chosen[k].data_ptr<int32_t>(), chosen[k].data_ptr<int32_t>() + U);
    out.log_prob = s.log_prob;
    out.entropy = s.entropy;
    if (options.will_score) kept_decisions_ = out.decisions;
    return out;
  }

  // The first Score of sampled decisions reads the decoder's states sampling
  // kept (their graph is backpropagated once); any other runs the decoder.
  PolicySamples Score(const std::vector<Decision>& decisions) override {
    const torch::Tensor chosen = DecisionsTensor(decisions, allowed_.size(0), allowed_.size(1));
    torch::Tensor outputs = std::move(kept_outputs_);
    kept_outputs_ = torch::Tensor();
    const std::vector<int64_t> rows = outputs.defined() ? RowsOfSampled(decisions, kept_decisions_) : std::vector<int64_t>();
    kept_decisions_.clear();
    const MarsNetImpl::Scored s =
        rows.empty() ? module_->net->Score(encoded_, chosen, module_->start, allowed_, options_.tanh_constant, options_.temperature)
                     : module_->net->ScoreOutputs(encoded_, outputs.index_select(0, torch::tensor(rows, torch::kInt64)), chosen,
                                                  module_->start, allowed_, options_.tanh_constant, options_.temperature);
    PolicySamples out;
    out.decisions = decisions;
    out.log_prob = s.log_prob;
    out.entropy = s.entropy;
    return out;
  }

 private:
  MarsGraphModule module_;
  torch::Tensor allowed_;
  const LearnedOptions options_;
  MarsNetImpl::Encoded encoded_;
  torch::Tensor kept_outputs_;           // [K, U, hidden], with gradients: what Sample kept for Score
  std::vector<Decision> kept_decisions_;  // the decisions they are of
};

class MarsPolicy : public UnitPolicy {
 public:
  MarsPolicy(std::shared_ptr<const UnitDecisions> units, std::shared_ptr<const UnitInputs> inputs, MarsNet net, const LearnedOptions& options)
      : UnitPolicy(std::move(units), options, "Mars"),
        inputs_(std::move(inputs)),
        module_(std::move(net), units_->num_units(), units_->num_devices()) {
    if (options_.unit.encoder_learning_rate == 0) {
      for (torch::Tensor& p : module_->net->encoder()->parameters()) p.set_requires_grad(false);
    }
  }

  std::unique_ptr<PolicyPass> Begin() override { return std::make_unique<MarsPass>(module_, inputs_->allowed, *inputs_, options_); }

  torch::nn::Module& module() override { return *module_; }
  std::vector<torch::Tensor> prior_parameters() override { return {module_->net->start_bias()}; }
  std::vector<torch::Tensor> encoder_parameters() override {
    if (options_.unit.encoder_learning_rate == 0) return {};
    return module_->net->encoder()->parameters();
  }

  std::unique_ptr<Policy> MakeSibling() const override {
    MarsNet net(MarsEncoder(module_->net->encoder()->architecture()), module_->net->architecture(), options_.unit.start_bias_or_default());
    return std::make_unique<MarsPolicy>(units_, inputs_, net, options_);
  }

  torch::Tensor start_placement() override { return module_->start; }

 private:
  std::shared_ptr<const UnitInputs> inputs_;
  MarsGraphModule module_;
};

}  // namespace

MarsEncoder MarsStartEncoder(const LearnedOptions& options, const std::vector<const Graph*>& graphs) {
  if (!options.unit.encoder_file.empty()) return LoadMarsEncoderFile(options.unit.encoder_file);
  MarsEncoderArchitecture a;
  a.hidden = options.mars.encoder_hidden;
  a.layers = options.mars.encoder_layers;
  a.vocabulary = UnitVocabulary(graphs);
  return MarsEncoder(a);
}

MarsPlacerArchitecture MarsPlacerArchitectureOf(const LearnedOptions& options, int64_t devices) {
  MarsPlacerArchitecture a;
  a.hidden = options.mars.hidden;
  a.segment = options.mars.segment;
  a.devices = devices;
  return a;
}

std::unique_ptr<Policy> MakeMarsPolicyWithNet(const PlacementProblem& problem, MarsNet net, const LearnedOptions& options) {
  if (net->architecture().devices != problem.cluster.num_devices()) {
    throw Error("a Mars network for " + std::to_string(net->architecture().devices) + " devices cannot place on cluster '" +
                ForMessage(problem.cluster.name) + "' of " + std::to_string(problem.cluster.num_devices()));
  }
  auto units = std::make_shared<const UnitDecisions>(problem, options.unit.start_bias_or_default() != 0 && options.unit.baseline_probes);
  auto inputs = std::make_shared<const UnitInputs>(
      BuildUnitInputs(units->features(), problem.graph, problem.cluster, net->encoder()->architecture().vocabulary));
  return std::make_unique<MarsPolicy>(std::move(units), std::move(inputs), std::move(net), options);
}

std::unique_ptr<Policy> MakeMarsPolicy(const PlacementProblem& problem, const LearnedOptions& options) {
  ValidateLearnedOptions(options);
  if (!options.policy_file.empty()) {
    if (!options.unit.encoder_file.empty()) throw Error("--encoder and --policy: a Mars policy file holds its encoder already; give one");
    MarsNet net = LoadMarsPolicyFile(options.policy_file, problem.cluster);
    if (options.unit.start_bias) net->set_start_bias(*options.unit.start_bias);
    return MakeMarsPolicyWithNet(problem, std::move(net), options);
  }
  MarsNet net(MarsStartEncoder(options, {&problem.graph}), MarsPlacerArchitectureOf(options, problem.cluster.num_devices()),
              options.unit.start_bias_or_default());
  return MakeMarsPolicyWithNet(problem, std::move(net), options);
}

}  // namespace devplace
