// The learned placers' face to the rest of devplace: their options, progress
// and result, and TrainLearnedPlacer. The methods are the 2017 paper's
// seq2seq placer ("rl"), HDP's Grouper+Placer ("hdp"), GDP ("gdp") and Mars
// ("mars") (learned/learned_methods.h), all trained by the one training loop
// (learned/training/training_loop.h) with REINFORCE or PPO on step time.
// This header has no torch in it, so the command line and the tests that
// only drive it build fast.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "learned/networks/gdp_network_sizes.h"
#include "learned/search/guided_search.h"
#include "placers/placer.h"
#include "sim/environment.h"

namespace devplace {

class TrainingRanks;  // learned/training/training_ranks.h

// The seq2seq network's options: the 2017 placer ("rl") reads all of them,
// HDP's Placer (the same network over its learned groups) all but
// group_order.
struct Seq2SeqPlacerOptions {
  // Network sizes. The public implementation uses 256 per encoder direction
  // and 512 in the decoder; on a 2-core machine half of each trains about
  // three times faster (a recurrent weight's gradient is rewritten at every
  // one of the hundreds of decoder steps), so these are the defaults.
  int64_t encoder_hidden = 128;
  int64_t decoder_hidden = 256;
  // Starting bonus on the logit of the device the previous group got
  // (learned from there): with groups read chain by chain, a good placement
  // is a few long runs of one device (docs/rl.md). Unless given, the 2017
  // placer starts at kDefaultStayBias and HDP measures its start instead:
  // probes of several run lengths pick the bonus per graph, runs of N / D
  // groups when a probe runs out of memory (learned/policies/hdp_policy.h).
  std::optional<double> stay_bias;
  static constexpr double kDefaultStayBias = 2.0;
  double stay_bias_or_default() const { return stay_bias.value_or(kDefaultStayBias); }
  // The order the policy reads the groups in: "chain" follows each chain of
  // the graph to its end (an LSTM layer through time) before the next,
  // "topological" is the graph's own order (docs/rl.md says why chain).
  std::string group_order = "chain";
};

// HDP (method "hdp"): its Grouper, and its Placer's start.
struct HdpPlacerOptions {
  // Groups the Grouper may use: 0 picks min(256, 20 x devices), the paper's
  // rule.
  int32_t groups = 0;
  int64_t grouper_hidden = 64;      // the Grouper's hidden layer
  double grouper_noise_std = 0;     // Gaussian noise on the Grouper's logits while sampling...
  int64_t grouper_noise_steps = 0;  // ...for this many steps
  // Starting weight of the Grouper's locality prior (learned from there):
  // an op's logit for group g is lowered by weight x (N x position - g - 1/2)^2,
  // its position in OpFeatures::unit_position's locality order, so the
  // first groupings are stretches of the network (layers, with their
  // backward ops) rather than random mixes, and group g precedes group g+1
  // in the network as the Placer reads them. 0: no prior, the paper's
  // Grouper (docs/rl.md has the measured difference).
  double grouper_locality = 1.0;
  // The starting penalty on the logits of slow devices (those its start
  // probes leave out; learned from there). Unless given, 0, and once a probe
  // shows the fast devices hold the graph, HdpSlowDevicePenalty.
  std::optional<double> slow_device_penalty;
};

// GDP (method "gdp", learned/policies/gdp_policy.h).
struct GdpPlacerOptions {
  // The network's sizes (learned/networks/gdp_net.h); a policy file brings
  // its own.
  GdpNetworkSizes network;
  // Exploration by stretches: while sampling for the first
  // stretch_noise_steps updates, one Gaussian draw of this std per
  // (stretch of the locality order, device) is added to the logits of the
  // stretch's units, so samples move whole stretches of the network rather
  // than scattered units (learned/policies/gdp_policy.cc).
  double stretch_noise_std = 0;
  int64_t stretch_noise_steps = 100000;
  // Exploration by window moves (learned/policies/window_moves.h): this
  // share of each update's samples is a draw with one window of the locality
  // order moved to one fast device. Half: GNMT-2 p100x2 0.320 s against
  // 0.373 s without, RNNLM 0.188 against 0.202 (docs/rl.md).
  double window_moves = 0.5;
};

// Mars (method "mars", learned/networks/mars_net.h). The placer's LSTM width
// and the units per attention segment; a fresh encoder's GCN width and layers
// (a pre-trained encoder brings its own).
struct MarsPlacerOptions {
  int64_t hidden = 64;
  int64_t segment = 64;
  int64_t encoder_hidden = 64;
  int64_t encoder_layers = 2;
};

// What the unit policies (GDP and Mars, learned/policies/unit_policy.h)
// share: their start and their graph encoder.
struct UnitPolicyOptions {
  // Starting bonus on each unit's logit for its start device, the fastest
  // of the start probes (learned from there; learned/policies/unit_decisions.h).
  // 0: no start probes, the paper's start from random weights. Unless given,
  // kDefaultStartBias; given beside a policy file, it replaces the learned
  // one the file holds, so a fine-tune can be told to stay nearer its start.
  std::optional<double> start_bias;
  static constexpr double kDefaultStartBias = 3.0;
  double start_bias_or_default() const { return start_bias.value_or(kDefaultStartBias); }
  // The start probes also measure the placements of the cheap baselines
  // (expert, METIS, MinCut, Scotch: milliseconds each), so the start is
  // never slower than the fastest of them (learned/policies/gdp_policy.cc says why).
  bool baseline_probes = true;
  // A pre-trained Mars encoder (`devplace pretrain`); empty: Mars starts a
  // fresh one (the paper's ablation without pre-training) and GDP uses
  // GraphSAGE. With one, GDP reads the graph through it instead.
  std::string encoder_file;
  // The graph encoder's own learning rate while the placer trains (0
  // freezes it).
  double encoder_learning_rate = 0.0003;
};

struct LearnedOptions {
  // Which learned placer: "rl" (2017: hand-made co-location groups read by
  // a seq2seq policy), "hdp" (2018: a learned Grouper, then the Placer) or
  // "gdp" (GraphSAGE and a segment-recurrent attention placer, learned/policies/gdp_policy.h)
  // or "mars" (a contrastively pre-trained encoder and a segment-level
  // seq2seq placer, learned/policies/mars_policy.h).
  std::string method = "rl";
  // How the policy learns: "reinforce" (the papers' 2017 and HDP rule) or
  // "ppo" (clipped surrogate, several epochs over each batch). The command
  // line's default is the method's (DefaultAlgorithm).
  std::string algorithm = "reinforce";
  int32_t ppo_epochs = 4;
  double ppo_clip = 0.2;
  // What rewards are compared against: "moving-average" (the papers'
  // exponential average, `baseline_decay`) or "batch-mean" (the mean reward
  // of the step's own samples).
  std::string baseline = "moving-average";

  // Budget: stop after this many policy updates, or this many seconds, or
  // this many sampled placements, whichever comes first (0 = no limit).
  int64_t max_steps = 0;
  double max_seconds = 0;
  int64_t max_samples = 0;

  // K: placements sampled per controller per update (§3.1). Sampling and
  // scoring 16 at once costs about twice what 4 do (docs/rl.md).
  int32_t samples_per_step = 16;
  int32_t controllers = 1;       // §3.4: controllers sharing parameters, each with K workers
  // Controllers across processes (`place --controllers` under a world,
  // exec/distributed/place_world.h): this process is one controller of
  // several, each with its own batch and seed stream; every update their
  // gradients are summed through rank 0's store and each takes the same
  // optimiser step. Rank 0 (rank() 0 here) writes every output and decides
  // when the run ends; the others write nothing. Null: one process's
  // controllers (`controllers` above, threads of this process).
  std::shared_ptr<TrainingRanks> controller_ranks;
  int32_t worker_threads = 0;    // threads evaluating placements; 0 = one per core

  // Optimisation. The public implementation's Adam learning rate is 0.1;
  // with Adam every weight moves by about the learning rate at each step, and
  // at 0.1 (or even 0.01) the first update already collapses this policy onto
  // whatever it sampled first; at 0.001 it still settles on one device
  // within some 100 updates on the LSTM models (see docs/rl.md).
  double learning_rate = 0.0003;
  // Adam's rate for the scalars that set a policy's start (HDP's stay bonus
  // and locality weight; Policy::prior_parameters). At the network's rate
  // they would stay where they start for the whole search (0.0003 a step);
  // at this one a start that does not suit the graph (long runs of one
  // device on a graph of parallel branches) is left within some 100 updates
  // (docs/rl.md). The 2017 placer has none: its stay bonus keeps the
  // network's rate.
  double prior_learning_rate = 0.03;
  double lr_decay = 0.95;
  int64_t lr_decay_every = 50;
  int64_t lr_decay_start = 400;
  double grad_clip_norm = 1.0;
  double baseline_decay = 0.9;
  // A failed placement counts as this slow (R = sqrt of it). The paper sets
  // it by hand per graph; 0 picks it per graph: twice the all-on-CPU step
  // time, or ten times the step-time lower bound if that does not run.
  double failing_runtime_s = 0;
  // What a placement out of memory counts as: "flat", the failing signal
  // (the 2017 paper), or "graded", the failing signal times 1 + the share of
  // its memory that did not fit, so that among failures those nearer to
  // fitting rank better (docs/rl.md, measured); "" picks the method's
  // default: flat for rl, graded for hdp.
  std::string failing_signal;
  int64_t cutover_step = 5000;     // after it, only placements that run update anything (§3.1)
  double entropy_weight = 0;
  double logit_noise_std = 0;      // Gaussian noise on logits while sampling...
  int64_t logit_noise_steps = 750; // ...for this many steps
  double tanh_constant = 5.0;
  double temperature = 1.0;

  // A trained GDP or Mars policy (`devplace train`) to start from instead of random
  // weights; with `zero_shot`, place with it without updating it: measure
  // its most likely placement and samples_per_step - 1 samples, keep the
  // fastest.
  std::string policy_file;
  bool zero_shot = false;
  // With a policy file and a budget of samples or seconds (no --max-steps):
  // fine-tune the policy in it instead of placing zero-shot and then
  // searching with guided from the zero-shot placement for the rest of it
  // (methods/run_method.h).
  bool fine_tune = false;

  // The finishing search (methods/run_method.h): this share of a
  // --max-samples and --max-seconds budget is kept from the learned run and
  // spent by mcmc's chain from its best placement (or, when none fits, from
  // the best of the one that overflowed least and the one-shot baselines).
  // 0: none. A budget of --max-steps alone has none.
  double finishing_share = 0.2;
  // While nothing it sampled fits, the learned run ends after this share of
  // its own budget of samples or seconds, and the finishing search has the
  // rest (set by the finishing search's caller; 0: the whole budget).
  double unfitted_share = 0;
  // Where a learned search (guided) starts; empty: the baselines' best.
  GuidedStart search_start;

  // The environment: deterministic by default; with noise, each placement is
  // measured the paper's way (run `measure_steps`, drop the first, average).
  double jitter = 0;
  double failure_probability = 0;
  int32_t measure_steps = 1;
  // Makes the environment instead of the simulated one (sim/environment.h):
  // `--reward measured` runs placements on the real executor. With one, a
  // failing runtime of 0 is picked from the environment's own measurement
  // of the all-on-one-CPU placement, not the simulator's.
  EnvironmentFactory make_environment;

  uint64_t seed = 1;

  // Output: a folder for the best placement, the search curve, checkpoints.
  // A checkpoint is written every `checkpoint_every` steps, at least every
  // `checkpoint_seconds` of wall time (a large model's early steps are slow:
  // step-based checkpoints alone could leave nothing after minutes), when the
  // first placement that runs is found, and at the end. 0 turns off the
  // step or the time trigger; both 0 means no checkpoints at all.
  std::string out_dir;              // empty: keep nothing on disk
  int64_t checkpoint_every = 50;
  double checkpoint_seconds = 30;
  bool resume = false;              // continue from out_dir's checkpoint
  std::string warm_start;         // a baseline method, placement file or "best" to imitate first ("" = none)
  int64_t warm_start_steps = 300;

  // What one method reads (each struct says which).
  Seq2SeqPlacerOptions seq2seq;
  HdpPlacerOptions hdp;
  GdpPlacerOptions gdp;
  MarsPlacerOptions mars;
  UnitPolicyOptions unit;
  // The guided search's proposer (learned/search/guided_search.h); its
  // learning rate is `learning_rate`.
  GuidedSearchOptions guided;
};

struct LearnedProgress {
  int64_t step = 0;
  int64_t samples = 0;
  double seconds = 0;
  double best_step_time_s = 0;    // 0 until a placement ran
  double mean_step_time_s = 0;    // of this step's placements that ran (0 if none)
  double failed_fraction = 0;
  double samples_per_second = 0;
  int32_t samples_used = 0;       // placements that updated the policy this step
  // Controllers across processes: the samples each has measured, in
  // controller order (empty with one).
  std::vector<int64_t> controller_samples;
};

struct LearnedResult {
  Placement best_placement;       // empty if no sampled placement ever ran
  // When none ran: the one out of memory that overflowed least (by the
  // graded failing signal's measure; the first, where failures are flat),
  // or empty.
  Placement closest_placement;
  double best_step_time_s = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double seconds = 0;
  std::string placement_file;     // where the best placement was written, if anywhere
  // Controllers across processes: the samples each measured, in controller
  // order (empty with one; `samples` is their sum).
  std::vector<int64_t> controller_samples;
};

using LearnedProgressCallback = std::function<void(const LearnedProgress&)>;

// What `place` trains `method` with when --algorithm is not given: "ppo"
// for gdp (its paper's), "reinforce" for the others.
std::string DefaultAlgorithm(const std::string& method);

// The placer's learning rate when --learning-rate is not given: 0.003 for
// mars, LearnedOptions' default (0.0003) for the others.
double DefaultLearningRate(const std::string& method);

// The learned methods `place --method` takes, in LearnedMethodList order.
const std::vector<std::string>& LearnedMethodNames();
bool IsLearnedMethod(const std::string& name);

// Throws Error naming the first option that is out of range (NaN and
// infinity included), in its flag's words. TrainLearnedPlacer calls it first.
void ValidateLearnedOptions(const LearnedOptions& options);

// Trains and returns the best placement found. Everything that can be known
// to be wrong (options, a group no device of the cluster can run, a warm
// start that does not resolve, a checkpoint that does not fit or is damaged)
// throws Error before anything is written to `out_dir`; torch's own errors
// come out as one-line Errors too.
LearnedResult TrainLearnedPlacer(const PlacementProblem& problem, const LearnedOptions& options,
                       const LearnedProgressCallback& on_step = nullptr);

}  // namespace devplace
