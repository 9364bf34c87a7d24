#include "rl/gdp_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "placers/placer.h"
#include "rl/op_features.h"
#include "util/error.h"

namespace devplace {
namespace {

// Slots per fast device that the start probes cut the locality order into
// (HDP's 20 groups per device); probes place runs of 20, 10, 5, 2 and 1
// slots per device.
constexpr int32_t kSlotsPerDevice = 20;
const double kProbeRuns[] = {20, 10, 5, 2, 1};

// What a policy holds per graph: the shared network and the graph's start
// placement ([U, D] one-hot, all zeros until the start probes choose one).
// The start is a parameter without gradient so that checkpoints and copies
// between controllers carry it with the network.
class GdpGraphModuleImpl : public torch::nn::Module {
 public:
  GdpGraphModuleImpl(GdpNet net, int64_t units, int64_t devices) : net(register_module("net", std::move(net))) {
    start = register_parameter("start", torch::zeros({units, devices}), /*requires_grad=*/false);
  }
  GdpNet net;
  torch::Tensor start;
};
TORCH_MODULE(GdpGraphModule);

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
  GdpPass(torch::Tensor log_probs, StretchNoise noise) : log_probs_(std::move(log_probs)), noise_(std::move(noise)) {}

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
    out.log_prob = log_probs_.gather(1, chosen).sum(0);
    out.entropy = Entropy().expand({K});
    return out;
  }

 private:
  torch::Tensor Entropy() const { return -(log_probs_.exp() * log_probs_).sum(); }

  torch::Tensor log_probs_;  // [U, D], with gradients
  StretchNoise noise_;
};

class GdpPolicy : public Policy {
 public:
  GdpPolicy(std::shared_ptr<const OpFeatures> features, std::shared_ptr<const GdpInputs> inputs,
            std::vector<int32_t> fast_devices, std::shared_ptr<const std::vector<Placement>> baseline_placements, GdpNet net,
            const RlOptions& options)
      : features_(std::move(features)),
        inputs_(std::move(inputs)),
        fast_devices_(std::move(fast_devices)),
        baseline_placements_(std::move(baseline_placements)),
        options_(options),
        module_(std::move(net), features_->num_units, inputs_->allowed.size(1)) {
    const torch::Tensor allowed = inputs_->allowed.to(torch::kUInt8).contiguous();
    allowed_.assign(allowed.data_ptr<uint8_t>(), allowed.data_ptr<uint8_t>() + allowed.numel());
    noise_.std = options_.gdp_stretch_noise_std;
    noise_.steps = options_.gdp_stretch_noise_steps;
    noise_.stretches = kSlotsPerDevice * static_cast<int64_t>(std::max<size_t>(1, fast_devices_.size()));
    std::vector<int64_t> stretch(features_->num_units);
    for (int32_t u = 0; u < features_->num_units; ++u) {
      stretch[u] = std::clamp<int64_t>(static_cast<int64_t>(features_->unit_position[u] * noise_.stretches), 0, noise_.stretches - 1);
    }
    noise_.stretch_of_unit = torch::tensor(stretch, torch::kInt64);
  }

  std::unique_ptr<PolicyPass> Begin() override {
    return std::make_unique<GdpPass>(module_->net->LogProbs(*inputs_, module_->start, options_.tanh_constant, options_.temperature),
                                     noise_);
  }

  Placement ToPlacement(const Decision& decision) const override {
    if (static_cast<int64_t>(decision.size()) != features_->num_units) throw Error("a GDP decision of the wrong size");
    Placement placement(features_->num_ops);
    for (int32_t op = 0; op < features_->num_ops; ++op) placement[op] = decision[features_->unit_of_op[op]];
    return placement;
  }

  // Each unit on the device most of its ops have (among those it may use).
  Decision Imitate(const Placement& placement) const override {
    if (static_cast<int32_t>(placement.size()) != features_->num_ops) throw Error("a placement of the wrong size cannot be imitated");
    const int32_t D = devices();
    Decision decision(features_->num_units);
    std::vector<int32_t> count(D);
    for (int32_t u = 0; u < features_->num_units; ++u) {
      std::fill(count.begin(), count.end(), 0);
      for (int32_t i = features_->unit_op_offsets[u]; i < features_->unit_op_offsets[u + 1]; ++i) {
        const int32_t d = placement[features_->unit_ops[i]];
        if (d >= 0 && d < D && Allowed(u, d)) ++count[d];
      }
      int32_t best = -1;
      for (int32_t d = 0; d < D; ++d) {
        if (Allowed(u, d) && (best < 0 || count[d] > count[best])) best = d;
      }
      decision[u] = best;
    }
    return decision;
  }

  torch::nn::Module& module() override { return *module_; }
  std::vector<torch::Tensor> prior_parameters() override { return {module_->net->start_bias()}; }

  // Stretches of the locality order round robin over the fast devices, in
  // runs of kProbeRuns slots, then everything on the fastest device. None
  // when the start bonus is 0 (the paper's start).
  std::vector<Decision> StartProbes() const override {
    if (options_.gdp_start_bias == 0) return {};
    const int32_t U = features_->num_units;
    const int32_t P = static_cast<int32_t>(fast_devices_.size());
    const int32_t slots = kSlotsPerDevice * P;
    std::vector<Decision> probes;
    if (P > 1) {
      for (double run : kProbeRuns) {
        Decision d(U);
        for (int32_t u = 0; u < U; ++u) {
          const int32_t slot = std::clamp(static_cast<int32_t>(features_->unit_position[u] * slots), 0, slots - 1);
          d[u] = RunnableOn(u, fast_devices_[static_cast<int32_t>(std::floor(slot / run)) % P]);
        }
        probes.push_back(std::move(d));
      }
    }
    Decision one(U);
    for (int32_t u = 0; u < U; ++u) one[u] = RunnableOn(u, fast_devices_[0]);
    probes.push_back(std::move(one));
    for (const Placement& placement : *baseline_placements_) probes.push_back(Imitate(placement));
    return probes;
  }

  // The fastest probe that ran becomes the start; none ran: no start.
  void ChooseStart(const std::vector<double>& step_times_s) override {
    const std::vector<Decision> probes = StartProbes();
    if (step_times_s.size() != probes.size()) {
      throw Error("GDP's start: " + std::to_string(step_times_s.size()) + " probe times for " + std::to_string(probes.size()) + " probes");
    }
    size_t best = probes.size();
    for (size_t i = 0; i < probes.size(); ++i) {
      if (std::isfinite(step_times_s[i]) && (best == probes.size() || step_times_s[i] < step_times_s[best])) best = i;
    }
    torch::NoGradGuard no_grad;
    module_->start.zero_();
    if (best == probes.size()) return;
    const Decision& d = probes[best];
    const torch::Tensor devices = torch::tensor(std::vector<int64_t>(d.begin(), d.end()), torch::kInt64).view({-1, 1});
    module_->start.scatter_(1, devices, 1.0);
  }

  std::unique_ptr<Policy> MakeSibling() const override {
    GdpNet net(module_->net->architecture(), options_.gdp_start_bias);
    return std::make_unique<GdpPolicy>(features_, inputs_, fast_devices_, baseline_placements_, net, options_);
  }

  int64_t num_units() const override { return features_->num_units; }

 private:
  int32_t devices() const { return static_cast<int32_t>(inputs_->allowed.size(1)); }
  bool Allowed(int32_t u, int32_t d) const { return allowed_[static_cast<size_t>(u) * devices() + d] != 0; }
  // `d` if unit u may run there, else the first device it may run on.
  int32_t RunnableOn(int32_t u, int32_t d) const {
    if (Allowed(u, d)) return d;
    for (int32_t other = 0; other < devices(); ++other) {
      if (Allowed(u, other)) return other;
    }
    return d;  // unreachable: BuildOpFeatures refuses a unit no device can run
  }

  std::shared_ptr<const OpFeatures> features_;
  std::shared_ptr<const GdpInputs> inputs_;
  std::vector<int32_t> fast_devices_;
  std::shared_ptr<const std::vector<Placement>> baseline_placements_;  // probed after the stretches
  RlOptions options_;
  GdpGraphModule module_;
  std::vector<uint8_t> allowed_;  // inputs_->allowed as plain bytes, [U * D]
  StretchNoise noise_;
};

// The placements of the baselines that cost milliseconds on any graph, for
// the start probes. The stretch probes cut the network along its locality
// order, which on LSTMs runs across time steps of every layer; no stretch
// split there beats one GPU, while the expert's layer-per-device placement
// (or a partitioner's cut) does, and from a one-GPU start the policy never
// finds the layer split by moving units one at a time (BENCHMARKS.md,
// GDP-one). A baseline that cannot place this graph (a cluster too small for
// its memory model, say) is simply not probed: probes are starting points,
// not results.
std::shared_ptr<const std::vector<Placement>> BaselinePlacements(const PlacementProblem& problem, const RlOptions& options) {
  auto placements = std::make_shared<std::vector<Placement>>();
  if (options.gdp_start_bias == 0 || !options.gdp_baseline_probes) return placements;
  for (const char* name : {"expert", "metis", "mincut", "scotch"}) {
    try {
      placements->push_back(FindPlacer(name).place(problem).placement);
    } catch (const Error&) {
    }
  }
  return placements;
}

// The devices of at least half the fastest one's peak (HDP's probe devices).
std::vector<int32_t> FastDevices(const Cluster& cluster) {
  double fastest = 0;
  for (const Device& d : cluster.devices) fastest = std::max(fastest, d.peak_flops_per_s);
  std::vector<int32_t> fast;
  for (int32_t d = 0; d < cluster.num_devices(); ++d) {
    if (cluster.devices[d].peak_flops_per_s >= 0.5 * fastest) fast.push_back(d);
  }
  return fast;
}

void CheckProblem(const PlacementProblem& problem) {
  if (problem.graph.num_ops() == 0) throw Error("graph '" + ForMessage(problem.graph.name) + "' has no ops to place");
  if (problem.cluster.num_devices() == 0) throw Error("cluster '" + ForMessage(problem.cluster.name) + "' has no devices");
}

}  // namespace

GdpArchitecture GdpArchitectureOf(const RlOptions& options, int64_t devices, std::vector<std::string> vocabulary) {
  GdpArchitecture a;
  a.hidden = options.gdp_hidden;
  a.sage_layers = options.gdp_sage_layers;
  a.placer_layers = options.gdp_placer_layers;
  a.heads = options.gdp_heads;
  a.segment = options.gdp_segment;
  a.attention = options.gdp_attention;
  a.superposition = options.gdp_superposition;
  a.devices = devices;
  a.vocabulary = std::move(vocabulary);
  return a;
}

std::unique_ptr<Policy> MakeGdpPolicyWithNet(const PlacementProblem& problem, GdpNet net, const RlOptions& options) {
  CheckProblem(problem);
  if (net->architecture().devices != problem.cluster.num_devices()) {
    throw Error("a GDP network for " + std::to_string(net->architecture().devices) + " devices cannot place on cluster '" +
                ForMessage(problem.cluster.name) + "' of " + std::to_string(problem.cluster.num_devices()));
  }
  auto features = std::make_shared<const OpFeatures>(BuildOpFeatures(problem.graph, problem.cluster));
  auto inputs = std::make_shared<const GdpInputs>(
      BuildGdpInputs(*features, problem.graph, problem.cluster, net->architecture().vocabulary));
  return std::make_unique<GdpPolicy>(features, inputs, FastDevices(problem.cluster), BaselinePlacements(problem, options),
                                     std::move(net), options);
}

std::unique_ptr<Policy> MakeGdpPolicy(const PlacementProblem& problem, const RlOptions& options) {
  ValidateRlOptions(options);
  CheckProblem(problem);
  if (!options.policy_file.empty()) return MakeGdpPolicyWithNet(problem, LoadGdpPolicyFile(options.policy_file, problem.cluster), options);
  GdpArchitecture architecture =
      GdpArchitectureOf(options, problem.cluster.num_devices(), GdpVocabulary({&problem.graph}));
  return MakeGdpPolicyWithNet(problem, GdpNet(architecture, options.gdp_start_bias), options);
}

}  // namespace devplace
