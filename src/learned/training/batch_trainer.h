// Training across graphs (`devplace train`): GDP's batch training (Zhou et
// al. §3.4), which Mars's placer uses too: one network trained on several
// graphs at once, for one cluster, with PPO. Each update samples K
// placements of every graph, measures them on that graph's environment,
// and takes the clipped surrogate of all of them together; a placement's
// advantage is its graph's baseline minus its reward over the spread of the
// graph's rewards that update, (b_g - r) / std_g, so a slow graph (or one
// whose placements differ more) does not drown the others. The result is a policy file
// (learned/networks/gdp_net.h) that `place --method gdp --policy` places unseen graphs
// with. No torch in this header: the command line includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/cluster_generator.h"
#include "cost/cost_model.h"
#include "placers/placer.h"
#include "learned/learned_placer.h"

namespace devplace {

class TrainingRanks;  // learned/training/training_ranks.h

struct BatchTrainOptions {
  // Network sizes, learning rates, K, PPO's epochs and clip, the failing
  // signal, the environment's noise, the seed and the budgets
  // (max_steps = updates, max_seconds, max_samples). method is "gdp" or "mars".
  LearnedOptions learned;
  std::string policy_out;  // the policy file written (atomically) at checkpoints and at the end
  // Continue from the training checkpoint next to policy_out
  // (policy_out + ".checkpoint"): same graphs, cluster and architecture.
  bool resume = false;
  // Data-parallel across processes (learned/training/training_ranks.h):
  // this rank trains graphs g with g mod WORLD_SIZE == its rank, and only
  // rank 0 writes the policy file and the checkpoint. Null: one process.
  std::shared_ptr<TrainingRanks> ranks;
  // Distils search into the policy (learned/training/search_targets.h):
  // the evaluations of mcmc that find each pair's target (0: reinforcement
  // only), and the weight of the imitation loss beside the reinforcement
  // loss. One process only.
  int64_t imitate_search_evaluations = 0;
  double imitation_weight = 1.0;
  // Each choice's term weighted by its ops' share of the FLOPs
  // (ChoiceWeights), instead of all alike.
  bool imitation_by_flops = false;
};

struct BatchGraphProgress {
  std::string graph;
  double best_step_time_s = 0;  // 0 until a placement ran
  double mean_step_time_s = 0;  // of this update's placements that ran (0 if none)
  double failed_fraction = 0;
};

struct BatchTrainProgress {
  int64_t update = 0;
  int64_t samples = 0;
  double seconds = 0;
  // With --imitate-search: -log p(target) per unit, the mean over the
  // update's pairs, before its first optimiser step; 0 otherwise.
  double imitation_loss_per_unit = 0;
  std::vector<BatchGraphProgress> graphs;
};

struct BatchTrainResult {
  int64_t updates = 0;
  int64_t samples = 0;
  double seconds = 0;
  std::vector<BatchGraphProgress> graphs;  // best step times found while training
};

// Where a training's clusters come from: the i-th of a list, cycled, or
// (later) of a seeded generator. At(i) must give the same cluster every
// time it is asked for the same i.
class ClusterSource {
 public:
  virtual ~ClusterSource() = default;
  // Distinct clusters: index i and i + count() name the same one.
  virtual int64_t count() const = 0;
  // The i-th cluster (0 <= i < count()), finalized.
  virtual Cluster At(int64_t i) const = 0;
  // What the policy file records it was trained on ("k80x2,p100x4").
  virtual std::string Describe() const = 0;
};

// The clusters of a list, in its order. Throws Error when empty.
std::shared_ptr<const ClusterSource> ClusterList(std::vector<Cluster> clusters);

// `count` clusters of the generator's stream `seed`: At(i) is
// GenerateClusterAt(options, seed, i), so the same options, seed and count
// give the same clusters in every run. Throws Error (one line) for count < 1
// or options out of range.
std::shared_ptr<const ClusterSource> GeneratedClusters(const ClusterGeneratorOptions& options, uint64_t seed, int64_t count);

// Graphs to train on, each placed in turn on clusters of `clusters`.
struct GraphsAndClusters {
  std::vector<const Graph*> graphs;  // outlive the training
  std::shared_ptr<const ClusterSource> clusters;
  // The cost model of a graph on a cluster (the command line's op times).
  std::function<CostModel(const Graph&, const Cluster&)> cost_model;
};

// Trains one policy across graphs and clusters: each update places every
// graph on one cluster of the source, the clusters cycling through the
// source (graph g at update t: cluster (t + g + seed) mod count),
// so that every graph meets every cluster and one network learns them all.
// A fixed head (the paper's) needs every cluster of one device count and
// kinds; a device-scoring head (--gdp-head devices) takes any. Each (graph,
// cluster) pair keeps its own baseline and start placement while it is
// live (the most recently used kMaxLivePairs are).
BatchTrainResult TrainAcrossGraphsAndClusters(const GraphsAndClusters& inputs, const BatchTrainOptions& options,
                                             const std::function<void(const BatchTrainProgress&)>& on_update = nullptr);
inline constexpr int64_t kMaxLivePairs = 64;

// Trains and writes options.policy_out. All problems share one cluster.
// Throws Error (one line) for bad options, a graph the cluster cannot run, or
// a checkpoint that does not match, before anything is written.
BatchTrainResult TrainAcrossGraphs(const std::vector<PlacementProblem>& problems, const BatchTrainOptions& options,
                              const std::function<void(const BatchTrainProgress&)>& on_update = nullptr);

}  // namespace devplace
