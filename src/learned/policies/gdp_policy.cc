#include "learned/policies/gdp_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "placers/placer.h"
#include "learned/features/device_features.h"
#include "learned/files/loaded_parameters.h"
#include "learned/policies/unit_policy.h"
#include "learned/policies/window_moves.h"
#include "util/error.h"
#include "learned/networks/policy_file.h"

namespace devplace {
namespace {

using GdpGraphModule = NetWithStart<GdpNet>;

// Exploration that moves stretches of the network, not single units: one
// Gaussian draw per (stretch of the locality order, device), added to the
// logits of every unit in that stretch while sampling.
struct StretchNoise {
  torch::Tensor stretch_of_unit;  // [U] int64
  int64_t stretches = 0;
  double std = 0;     // 0: none
  int64_t steps = 0;  // applies to samples of updates before this one
};

class GdpPass : public PolicyPass {
 public:
  GdpPass(torch::Tensor log_probs, StretchNoise noise, std::shared_ptr<const WindowMoves> moves)
      : log_probs_(std::move(log_probs)), noise_(std::move(noise)), moves_(std::move(moves)) {}

  PolicySamples Sample(int64_t count, torch::Generator& generator, const SampleOptions& options) override {
    torch::NoGradGuard no_grad;
    torch::Tensor log_probs = log_probs_.detach();
    torch::Tensor chosen;  // [U, K]
    if (!options.greedy && noise_.std > 0 && options.step < noise_.steps) {
      // Drawn from the noisy logits; the log-probabilities below are the
      // policy's own, as with --logit-noise.
      std::vector<torch::Tensor> draws;
      for (int64_t k = 0; k < count; ++k) {
        torch::Tensor z = torch::randn({noise_.stretches, log_probs.size(1)}, generator) * noise_.std;
        torch::Tensor noisy = torch::log_softmax(log_probs + z.index_select(0, noise_.stretch_of_unit), 1);
        draws.push_back(torch::multinomial(noisy.exp(), 1, true, generator));
      }
      chosen = torch::cat(draws, 1);
    } else if (options.greedy) {
      chosen = log_probs.argmax(1, true).expand({log_probs.size(0), count}).contiguous();
    } else if (options.logit_noise_std > 0) {
      std::vector<torch::Tensor> draws;
      for (int64_t k = 0; k < count; ++k) {
        torch::Tensor noisy = torch::log_softmax(log_probs + torch::randn(log_probs.sizes(), generator) * options.logit_noise_std, 1);
        draws.push_back(torch::multinomial(noisy.exp(), 1, true, generator));
      }
      chosen = torch::cat(draws, 1);
    } else {
      chosen = torch::multinomial(log_probs.exp(), count, true, generator);
    }
    PolicySamples out;
    torch::Tensor devices = chosen.t().to(torch::kInt32).contiguous();
    const int64_t U = devices.size(1);
    for (int64_t k = 0; k < count; ++k) out.decisions.emplace_back(devices[k].data_ptr<int32_t>(), devices[k].data_ptr<int32_t>() + U);
    const int64_t moved = options.greedy ? 0 : moves_->MovedSamples(count);
    if (moved > 0) {
      // The last draws of the update get a window move; their
      // log-probabilities are the policy's own of the moved decision.
      Random random(static_cast<uint64_t>(torch::randint(int64_t{1} << 62, {1}, generator).item<int64_t>()));
      for (int64_t k = count - moved; k < count; ++k) moves_->Apply(out.decisions[k], random);
      std::vector<int64_t> flat;
      flat.reserve(count * U);
      for (const Decision& d : out.decisions) flat.insert(flat.end(), d.begin(), d.end());
      chosen = torch::tensor(flat, torch::kInt64).view({count, U}).t();
    }
    out.log_prob = log_probs.gather(1, chosen).sum(0);
    out.entropy = Entropy().detach().expand({count}).clone();
    return out;
  }

  PolicySamples Score(const std::vector<Decision>& decisions) override {
    const int64_t U = log_probs_.size(0), D = log_probs_.size(1), K = static_cast<int64_t>(decisions.size());
    std::vector<int64_t> flat;
    flat.reserve(K * U);
    for (const Decision& d : decisions) {
      if (static_cast<int64_t>(d.size()) != U) throw Error("a GDP decision has " + std::to_string(d.size()) + " units, not " + std::to_string(U));
      for (int32_t device : d) {
        if (device < 0 || device >= D) throw Error("a GDP decision names device " + std::to_string(device) + " of " + std::to_string(D));
        flat.push_back(device);
      }
    }
    torch::Tensor chosen = torch::tensor(flat, torch::kInt64).view({K, U}).t();  // [U, K]
    PolicySamples out;
    out.decisions = decisions;
    const torch::Tensor per_choice = log_probs_.gather(1, chosen);  // [U, K]
    out.log_prob = per_choice.sum(0);
    out.choice_log_prob = per_choice.t();
    out.entropy = Entropy().expand({K});
    return out;
  }

 private:
  torch::Tensor Entropy() const { return -(log_probs_.exp() * log_probs_).sum(); }

  torch::Tensor log_probs_;  // [U, D], with gradients
  StretchNoise noise_;
  std::shared_ptr<const WindowMoves> moves_;
};

class GdpPolicy : public UnitPolicy {
 public:
  GdpPolicy(std::shared_ptr<const UnitDecisions> units, std::shared_ptr<const UnitInputs> inputs,
            std::shared_ptr<const WindowMoves> moves, GdpNet net, const LearnedOptions& options)
      : UnitPolicy(std::move(units), options, "GDP"),
        inputs_(std::move(inputs)),
        moves_(std::move(moves)),
        module_(std::move(net), units_->num_units(), units_->num_devices()) {
    // A Mars encoder in GraphSAGE's place learns at its own rate; 0 freezes it.
    if (module_->net->encoder() && options_.unit.encoder_learning_rate == 0) {
      for (torch::Tensor& p : module_->net->encoder()->parameters()) p.set_requires_grad(false);
    }
    noise_.std = options_.gdp.stretch_noise_std;
    noise_.steps = options_.gdp.stretch_noise_steps;
    noise_.stretches = UnitDecisions::kSlotsPerDevice * std::max<int64_t>(1, units_->num_fast_devices());
    std::vector<int64_t> stretch(units_->num_units());
    for (int32_t u = 0; u < units_->num_units(); ++u) stretch[u] = units_->StretchOf(u, noise_.stretches);
    noise_.stretch_of_unit = torch::tensor(stretch, torch::kInt64);
  }

  std::unique_ptr<PolicyPass> Begin() override {
    return std::make_unique<GdpPass>(module_->net->LogProbs(*inputs_, module_->start, options_.tanh_constant, options_.temperature),
                                     noise_, moves_);
  }

  torch::nn::Module& module() override { return *module_; }
  std::vector<torch::Tensor> prior_parameters() override { return {module_->net->start_bias()}; }
  std::vector<torch::Tensor> encoder_parameters() override {
    if (!module_->net->encoder() || options_.unit.encoder_learning_rate == 0) return {};
    return module_->net->encoder()->parameters();
  }

  std::unique_ptr<Policy> MakeSibling() const override {
    GdpNet net(module_->net->architecture(), options_.unit.start_bias_or_default());
    return std::make_unique<GdpPolicy>(units_, inputs_, moves_, net, options_);
  }

  torch::Tensor start_placement() override { return module_->start; }

 private:
  std::shared_ptr<const UnitInputs> inputs_;
  std::shared_ptr<const WindowMoves> moves_;
  GdpGraphModule module_;
  StretchNoise noise_;
};

}  // namespace

GdpArchitecture GdpArchitectureOf(const LearnedOptions& options, int64_t devices, std::vector<std::string> vocabulary) {
  GdpArchitecture a;
  a.sizes = options.gdp.network;
  if (a.sizes.head == "devices") {
    a.device_features = KnownDeviceFeatures();
  } else {
    a.devices = devices;
  }
  a.vocabulary = std::move(vocabulary);
  return a;
}

std::unique_ptr<Policy> MakeGdpPolicyWithNet(const PlacementProblem& problem, GdpNet net, const LearnedOptions& options) {
  if (net->architecture().sizes.head != "devices" && net->architecture().devices != problem.cluster.num_devices()) {
    throw Error("a GDP network for " + std::to_string(net->architecture().devices) + " devices cannot place on cluster '" +
                ForMessage(problem.cluster.name) + "' of " + std::to_string(problem.cluster.num_devices()));
  }
  auto units = std::make_shared<const UnitDecisions>(problem, options.unit.start_bias_or_default() != 0 && options.unit.baseline_probes);
  auto inputs = std::make_shared<const UnitInputs>(
      BuildUnitInputs(units->features(), problem.graph, problem.cluster, net->architecture().vocabulary, net->architecture().device_features));
  auto moves = std::make_shared<const WindowMoves>(*units, options.gdp.window_moves);
  return std::make_unique<GdpPolicy>(std::move(units), std::move(inputs), std::move(moves), std::move(net), options);
}

GdpNet MakeGdpNet(const LearnedOptions& options, int64_t devices, const std::vector<const Graph*>& graphs) {
  if (options.unit.encoder_file.empty()) return GdpNet(GdpArchitectureOf(options, devices, UnitVocabulary(graphs)), options.unit.start_bias_or_default());
  MarsEncoder pretrained = LoadMarsEncoderFile(options.unit.encoder_file);
  GdpArchitecture architecture = GdpArchitectureOf(options, devices, pretrained->architecture().vocabulary);
  architecture.encoder = pretrained->architecture();
  GdpNet net(architecture, options.unit.start_bias_or_default());
  CopyParameters(*pretrained, *net->encoder());
  return net;
}

std::unique_ptr<Policy> MakeGdpPolicy(const PlacementProblem& problem, const LearnedOptions& options) {
  ValidateLearnedOptions(options);
  if (!options.policy_file.empty()) {
    if (!options.unit.encoder_file.empty()) throw Error("--encoder and --policy: a trained policy holds its graph embedding already; give one");
    GdpNet net = LoadGdpPolicyFile(options.policy_file, problem.cluster);
    if (options.unit.start_bias) net->set_start_bias(*options.unit.start_bias);
    return MakeGdpPolicyWithNet(problem, std::move(net), options);
  }
  return MakeGdpPolicyWithNet(problem, MakeGdpNet(options, problem.cluster.num_devices(), {&problem.graph}), options);
}

}  // namespace devplace
