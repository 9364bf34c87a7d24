// `devplace train`: batch training of one GDP or Mars policy over several
// graphs and clusters (learned/training/batch_trainer.h), written as a policy file that
// `place --method gdp|mars --policy` uses.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/inputs.h"
#include "cli/learned_commands.h"
#include "cli/learned_flags.h"
#include "cluster/cluster_json.h"
#include "exec/distributed/train_world.h"
#include "exec/distributed/world.h"
#include "graph/graph_json.h"
#include "learned/training/batch_trainer.h"
#include "learned/training/one_line_errors.h"
#include "sim/simulator.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

struct TrainFlags {
  std::string method = "gdp";
  std::vector<std::string> graphs;
  std::vector<std::string> clusters;
  // --random-clusters: that many clusters of the generator's stream.
  int64_t random_clusters = 0;
  std::string cluster_profile = "mixed";
  uint64_t cluster_seed = 1;
  int32_t cluster_min_devices = 0;  // 0: the profile's
  int32_t cluster_max_devices = 0;
  BatchTrainOptions train;
  bool quiet = false;
  bool learning_rate_given = false;
  bool overwrite = false;
  std::string imitation_weighting = "uniform";
};

// One line per update at most once a second: the update, -log p(target)
// per unit when imitating search, then per graph its best and mean step
// time.
class TrainProgressPrinter {
 public:
  void operator()(const BatchTrainProgress& p, bool last) {
    auto now = std::chrono::steady_clock::now();
    if (p.update == printed_update_ || (!last && printed_ && now - last_ < std::chrono::seconds(1))) return;
    last_ = now;
    printed_ = true;
    printed_update_ = p.update;
    std::ostringstream line;
    char head[96];
    std::snprintf(head, sizeof head, "update %5lld  %7lld samples  (%.0f s)", static_cast<long long>(p.update),
                  static_cast<long long>(p.samples), p.seconds);
    line << head;
    if (p.imitation_loss_per_unit > 0) {
      char part[64];
      std::snprintf(part, sizeof part, "  imitation %.3f", p.imitation_loss_per_unit);
      line << part;
    }
    for (const BatchGraphProgress& g : p.graphs) {
      char part[160];
      std::snprintf(part, sizeof part, "  %s best %.4g mean %.4g", ForMessage(g.graph, 40).c_str(), g.best_step_time_s, g.mean_step_time_s);
      line << part;
    }
    std::fprintf(stderr, "%s\n", line.str().c_str());
  }

 private:
  std::chrono::steady_clock::time_point last_;
  bool printed_ = false;
  int64_t printed_update_ = -1;
};

// The clusters of --random-clusters: the generator's stream --cluster-seed
// with --cluster-profile's settings. Only a device-scoring head places on
// clusters of any device count.
std::shared_ptr<const ClusterSource> GeneratedClusterSource(const TrainFlags& flags, const LearnedOptions& learned) {
  if (learned.method != "gdp" || learned.gdp.network.head != "devices") {
    throw Error("train: --random-clusters needs --method gdp --gdp-head devices (a fixed head places on one device count and kinds)");
  }
  const std::optional<ClusterProfile> profile = ParseClusterProfile(flags.cluster_profile);
  if (!profile) {
    std::string names;
    for (const std::string& name : ClusterProfileNames()) names += (names.empty() ? "" : ", ") + name;
    throw Error("train: unknown --cluster-profile '" + ForMessage(flags.cluster_profile) + "' (profiles: " + names + ")");
  }
  ClusterGeneratorOptions options = ClusterGeneratorOptions::ForProfile(*profile);
  if (flags.cluster_min_devices > 0) options.min_devices = flags.cluster_min_devices;
  if (flags.cluster_max_devices > 0) options.max_devices = flags.cluster_max_devices;
  if (options.min_devices > options.max_devices) {
    throw Error("train: --cluster-min-devices " + std::to_string(options.min_devices) + " is above --cluster-max-devices " +
                std::to_string(options.max_devices));
  }
  return GeneratedClusters(options, flags.cluster_seed, flags.random_clusters);
}

// What every rank of a training across processes must have alike: the
// program, every graph and cluster, and every flag (a learning rate that
// differs would part the ranks' networks).
std::vector<WorldFact> TrainWorldFacts(const std::vector<std::unique_ptr<Graph>>& graphs, const std::vector<Cluster>& clusters,
                                       const std::string& flags_text) {
  std::string graph_text, cluster_text;
  for (const std::unique_ptr<Graph>& graph : graphs) graph_text += GraphToJson(*graph).dump() + "\n";
  for (const Cluster& cluster : clusters) cluster_text += ClusterToJson(cluster).dump() + "\n";
  return {ProgramFact(), {"--graphs", graph_text}, {"--cluster", cluster_text}, {"command line", flags_text}};
}

void RunTrain(TrainFlags flags, const std::string& flags_text) {
  if (flags.method != "gdp" && flags.method != "mars") {
    throw Error("train: --method must be gdp or mars (the learned methods trained across graphs), got '" + ForMessage(flags.method) + "'");
  }
  flags.train.learned.method = flags.method;
  flags.train.imitation_by_flops = flags.imitation_weighting == "flops";
  if (flags.train.imitation_by_flops && flags.method != "gdp") {
    throw Error("train: --imitation-weighting flops is built for --method gdp only (Mars's decoder scores a placement whole)");
  }
  if (!flags.learning_rate_given) flags.train.learned.learning_rate = DefaultLearningRate(flags.method);
  if (flags.graphs.empty()) throw Error("train: --graphs names no graph");
  LearnedOptions& learned = flags.train.learned;
  if (learned.max_steps <= 0 && learned.max_seconds <= 0 && learned.max_samples <= 0) learned.max_seconds = 600;
  ValidateLearnedOptions(learned);
  RefuseToReplaceTrainedFile(flags.train.policy_out, flags.train.resume, flags.overwrite, "policy");
  std::shared_ptr<const ClusterSource> generated;
  if (flags.random_clusters > 0) {
    if (!flags.clusters.empty()) throw Error("train: --cluster and --random-clusters do not go together (give one)");
    generated = GeneratedClusterSource(flags, learned);
  } else if (flags.clusters.empty()) {
    throw Error("train: --cluster names no cluster (or give --random-clusters N)");
  }
  std::vector<Cluster> clusters;
  for (const std::string& name : flags.clusters) clusters.push_back(ResolveCluster(name));
  // Graphs, cost models and simulators live as long as the training.
  std::vector<std::unique_ptr<Graph>> graphs;
  for (const std::string& name : flags.graphs) {
    graphs.push_back(std::make_unique<Graph>(ResolveGraph(name)));
    for (const Cluster& cluster : clusters) CheckClusterCanRun(*graphs.back(), cluster);
  }
  // Under RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: data-parallel, the
  // graphs dealt across the ranks; only rank 0 prints and writes.
  flags.train.ranks = JoinTrainWorld(TrainWorldFacts(graphs, clusters, flags_text));
  const bool controller = !flags.train.ranks || flags.train.ranks->rank() == 0;
  if (!controller) flags.quiet = true;
  StopOnSignals();  // a Ctrl-C ends the training early; the policy is still written
  TrainProgressPrinter printer;
  BatchTrainProgress last;
  auto on_update = [&](const BatchTrainProgress& p) {
    last = p;
    if (!flags.quiet) printer(p, false);
  };
  BatchTrainResult result;
  std::vector<std::unique_ptr<CostModel>> costs;
  std::vector<std::unique_ptr<Simulator>> simulators;
  std::vector<PlacementProblem> problems;
  if (clusters.size() == 1 && !generated) {
    for (const std::unique_ptr<Graph>& graph : graphs) {
      costs.push_back(std::make_unique<CostModel>(MakeCostModel(clusters.front(), *graph, OpTimesFlags())));
      simulators.push_back(std::make_unique<Simulator>(*graph, clusters.front(), *costs.back()));
      problems.push_back(PlacementProblem{*graph, clusters.front(), *costs.back(), *simulators.back(), learned.seed});
    }
    result = TrainAcrossGraphs(problems, flags.train, on_update);
  } else {
    GraphsAndClusters inputs;
    for (const std::unique_ptr<Graph>& graph : graphs) inputs.graphs.push_back(graph.get());
    inputs.clusters = generated ? generated : ClusterList(std::move(clusters));
    inputs.cost_model = [](const Graph& graph, const Cluster& cluster) { return MakeCostModel(cluster, graph, OpTimesFlags()); };
    result = TrainAcrossGraphsAndClusters(inputs, flags.train, on_update);
  }
  if (!controller) return;
  if (!flags.quiet && last.update > 0) printer(last, true);
  std::printf("trained %lld updates (%lld samples) in %.1f s on %zu graphs%s; policy in %s\n", static_cast<long long>(result.updates),
              static_cast<long long>(result.samples), result.seconds, result.graphs.size(),
              flags.train.ranks ? (" across " + std::to_string(flags.train.ranks->size()) + " processes").c_str() : "",
              flags.train.policy_out.c_str());
  for (const BatchGraphProgress& g : result.graphs) {
    std::printf("  %s: best %.6f s while training\n", ForMessage(g.graph).c_str(), g.best_step_time_s);
  }
}

}  // namespace

void AddTrainCommand(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  LearnedOptions& learned = flags->train.learned;
  learned.method = "gdp";
  learned.algorithm = "ppo";  // GDP's algorithm (§3.4)
  CLI::App* cmd = app.add_subcommand("train", LearnedCommandDescription("train"));
  cmd->add_option("--method", flags->method, "gdp (default) or mars: the learned methods trained across graphs");
  cmd->add_option("--graphs", flags->graphs, "Graph files or built-in model names, comma-separated")->required()->delimiter(',');
  cmd->add_option("--cluster", flags->clusters,
                  "Cluster presets or cluster files, comma-separated: each update places every graph on one of them, in turn "
                  "(a fixed head needs one device count and kinds; --gdp-head devices takes any)")
      ->delimiter(',');
  cmd->add_option("--random-clusters", flags->random_clusters,
                  "Train on this many random clusters of the generator (devplace generate cluster) instead of --cluster; "
                  "needs --gdp-head devices")
      ->check(InRange(1, 1000000));
  cmd->add_option("--cluster-profile", flags->cluster_profile, "With --random-clusters: mixed (default), hetero or tight");
  cmd->add_option("--cluster-seed", flags->cluster_seed, "With --random-clusters: the generator's seed (default 1)");
  cmd->add_option("--cluster-min-devices", flags->cluster_min_devices,
                  "With --random-clusters: at least this many devices, the CPU included (default 2)")
      ->check(InRange(1, kMaxDevices));
  cmd->add_option("--cluster-max-devices", flags->cluster_max_devices,
                  "With --random-clusters: at most this many devices, the CPU included (default 16)")
      ->check(InRange(1, kMaxDevices));
  cmd->add_option("-o,--out", flags->train.policy_out, "The policy file to write (also written at each checkpoint)")->required();
  cmd->add_option("--seed", learned.seed, "Seed of every random choice");
  cmd->add_option("--max-steps", learned.max_steps, "Stop after this many updates")->check(NotNegative());
  cmd->add_option("--max-seconds", learned.max_seconds, "Stop after this many seconds (default 600 when no budget is given)")
      ->check(NotNegative());
  cmd->add_option("--max-samples", learned.max_samples, "Stop after this many sampled placements, all graphs together")
      ->check(NotNegative());
  cmd->add_option("--samples-per-step", learned.samples_per_step, "K: placements sampled per graph per update")->check(InRange(1, 1024));
  cmd->add_option("--workers", learned.worker_threads, "Threads measuring placements (0 = one per core)")->check(InRange(0, 256));
  cmd->add_option("--algorithm", learned.algorithm, "ppo (default, GDP's) or reinforce (one pass of the same loss)");
  cmd->add_option("--ppo-epochs", learned.ppo_epochs, "PPO: passes over each batch");
  cmd->add_option("--ppo-clip", learned.ppo_clip, "PPO: the ratio is clipped to [1 - c, 1 + c]");
  cmd->add_option("--learning-rate", learned.learning_rate, "Adam's learning rate (default 0.0003; mars: 0.003)")->check(Positive());
  cmd->add_option("--prior-learning-rate", learned.prior_learning_rate, "Adam's learning rate for the start bonus")->check(Positive());
  cmd->add_option("--baseline-decay", learned.baseline_decay, "Decay of each graph's moving-average baseline")->check(InRange(0.0, 1.0));
  cmd->add_option("--entropy-weight", learned.entropy_weight, "Weight of the entropy bonus")->check(NotNegative());
  cmd->add_option("--failing-signal", learned.failing_signal, "flat or graded (default) out-of-memory signal")
      ->check(CLI::IsMember({"flat", "graded"}));
  cmd->add_option("--checkpoint-every", learned.checkpoint_every, "Updates between saves of the policy and checkpoint (0 = none by updates)")
      ->check(NotNegative());
  cmd->add_option("--checkpoint-seconds", learned.checkpoint_seconds, "Seconds between saves (0 = none by time; default 30)")
      ->check(InRange(0.0, 1e9));
  cmd->add_option("--imitate-search", flags->train.imitate_search_evaluations,
                  "Distil search: each (graph, cluster) pair's target is mcmc's best after this many evaluations, and every "
                  "optimiser step also learns to place like the targets (0 = reinforcement only, the default)")
      ->check(InRange(0, 100000000));
  // At most 1000: a larger weight leaves the reinforcement loss nothing, and
  // near 1e300 the scaled loss overflows float and the parameters go NaN.
  cmd->add_option("--imitation-weight", flags->train.imitation_weight,
                  "With --imitate-search: the imitation loss's weight beside the reinforcement loss (default 1, at most 1000)")
      ->check(Positive())
      ->check(InRange(0.0, 1000.0));
  cmd->add_option("--imitation-weighting", flags->imitation_weighting,
                  "With --imitate-search: each unit's term alike (uniform, the default) or by its share of the FLOPs (flops)")
      ->check(CLI::IsMember({"uniform", "flops"}));
  cmd->add_flag("--resume", flags->train.resume, "Continue from the checkpoint next to the policy file (POLICY.checkpoint)");
  cmd->add_flag("--overwrite", flags->overwrite, "Replace an existing policy file (without it, one is refused unless --resume)");
  cmd->add_flag("--quiet", flags->quiet, "No progress lines");
  AddGdpNetworkFlags(cmd, learned, "GDP");
  AddMarsFlags(cmd, learned, "Mars");
  cmd->callback([flags, cmd] {
    RunWithOneLineErrors("train", [&] {
      flags->learning_rate_given = cmd->count("--learning-rate") > 0;
      // Every flag's value, defaults included: compared across ranks.
      RunTrain(*flags, cmd->config_to_str(/*default_also=*/true, /*write_description=*/false));
    });
  });
}

}  // namespace devplace
