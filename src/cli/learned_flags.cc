#include "cli/learned_flags.h"

#include <CLI/CLI.hpp>

#include "cli/flag_checks.h"
#include "util/error.h"

namespace devplace {

std::vector<const CLI::Option*> AddGdpNetworkFlags(CLI::App* command, LearnedOptions& learned, const std::string& group) {
  std::vector<const CLI::Option*> fixed_by_policy;
  command->add_option(
         "--start-bias", learned.unit.start_bias,
         "GDP: starting bonus on each unit's logit for the device of the fastest start probe (learned; 0 = no probes; "
         "with --policy it replaces the policy's learned bonus)")
      ->group(group)->check(InRange(0.0, 100.0));
  command->add_flag("--gdp-no-baseline-probes{false}", learned.unit.baseline_probes,
                    "GDP: start probes of the network's stretches only, not the cheap baselines' placements (expert, METIS, MinCut, Scotch, dp_split, list schedulers)")
      ->group(group);
  command->add_option("--stretch-noise", learned.gdp.stretch_noise_std,
                      "GDP: std of Gaussian noise drawn per stretch of the network and device, added to its units' logits "
                      "while sampling (moves whole stretches)")
      ->group(group)->check(InRange(0.0, 100.0));
  command->add_option("--stretch-noise-steps", learned.gdp.stretch_noise_steps, "GDP: updates during which the stretch noise applies")
      ->group(group)->check(NotNegative());
  command->add_option("--window-moves", learned.gdp.window_moves,
                      "GDP: share of each update's samples that move one window of the network's locality order to one fast "
                      "device (coherent exploration)")
      ->group(group)->check(InRange(0.0, 1.0));
  fixed_by_policy.push_back(command->add_option("--gdp-hidden", learned.gdp.network.hidden, "GDP: width of GraphSAGE and the placer")
      ->group(group)->check(InRange(1, 4096)));
  fixed_by_policy.push_back(command->add_option("--gdp-sage-layers", learned.gdp.network.sage_layers, "GDP: GraphSAGE layers")
      ->group(group)->check(InRange(0, 16)));
  fixed_by_policy.push_back(command->add_option("--gdp-placer-layers", learned.gdp.network.placer_layers, "GDP: the placer's attention layers")
      ->group(group)->check(InRange(0, 16)));
  fixed_by_policy.push_back(command->add_option("--gdp-heads", learned.gdp.network.heads, "GDP: attention heads (divides --gdp-hidden)")
      ->group(group)->check(InRange(1, 64)));
  fixed_by_policy.push_back(command->add_option("--gdp-segment", learned.gdp.network.segment, "GDP: units per Transformer-XL segment")
      ->group(group)->check(InRange(1, 1 << 20)));
  fixed_by_policy.push_back(command->add_flag("--gdp-no-attention{false}", learned.gdp.network.attention, "GDP ablation: segment recurrence only, no attention")
      ->group(group));
  fixed_by_policy.push_back(command->add_flag("--gdp-no-superposition{false}", learned.gdp.network.superposition, "GDP ablation: no graph context gating the layers")
      ->group(group));
  fixed_by_policy.push_back(command->add_option("--gdp-head", learned.gdp.network.head,
                                                 "GDP: fixed (a logit per device of one cluster, the paper's) or devices (scores each "
                                                 "unit against each device's features: one policy for any cluster)")
      ->group(group)->check(CLI::IsMember({"fixed", "devices"})));
  fixed_by_policy.push_back(command->add_option("--gdp-device-scoring", learned.gdp.network.device_scoring,
                                                 "GDP with --gdp-head devices: mlp (default) or dot, how a unit and a device make a logit")
      ->group(group)->check(CLI::IsMember({"dot", "mlp"})));
  fixed_by_policy.push_back(command->add_flag("--gdp-no-device-links{false}", learned.gdp.network.device_links,
                                              "GDP with --gdp-head devices: no round of messages between devices over their links")
      ->group(group));
  return fixed_by_policy;
}

std::vector<const CLI::Option*> AddMarsFlags(CLI::App* command, LearnedOptions& learned, const std::string& group) {
  std::vector<const CLI::Option*> fixed_by_policy;
  command->add_option("--encoder", learned.unit.encoder_file, "Mars: a graph encoder pre-trained by `devplace pretrain` (none: a fresh one); with --method gdp, it replaces GraphSAGE")
      ->group(group);
  command->add_option("--mars-encoder-learning-rate", learned.unit.encoder_learning_rate,
                      "Mars: Adam's learning rate for the graph encoder while the placer trains (0 freezes it)")
      ->group(group)->check(InRange(0.0, 1.0));
  fixed_by_policy.push_back(command->add_option("--mars-hidden", learned.mars.hidden, "Mars: width of the placer's LSTMs")
      ->group(group)->check(InRange(1, 4096)));
  fixed_by_policy.push_back(command->add_option("--mars-segment", learned.mars.segment, "Mars: units per attention segment")
      ->group(group)->check(InRange(1, 1 << 20)));
  fixed_by_policy.push_back(command->add_option("--mars-encoder-hidden", learned.mars.encoder_hidden, "Mars: width of a fresh encoder's GCN")
      ->group(group)->check(InRange(1, 4096)));
  fixed_by_policy.push_back(command->add_option("--mars-encoder-layers", learned.mars.encoder_layers, "Mars: a fresh encoder's GCN layers")
      ->group(group)->check(InRange(1, 16)));
  return fixed_by_policy;
}

void RefuseFlagsFixedByPolicy(std::span<const CLI::Option* const> fixed_by_policy, const LearnedOptions& learned) {
  if (learned.policy_file.empty()) return;
  for (const CLI::Option* option : fixed_by_policy) {
    if (option->count() > 0) {
      throw Error(option->get_name() + " does not go with --policy: the policy file fixes the network's architecture");
    }
  }
}

}  // namespace devplace
