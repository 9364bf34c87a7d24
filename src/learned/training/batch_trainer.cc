#include "learned/training/batch_trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>


#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <list>
#include <optional>
#include <sstream>
#include <thread>

#include "learned/training/algorithm.h"
#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/networks/gdp_net.h"
#include "learned/policies/gdp_policy.h"
#include "learned/policies/mars_policy.h"
#include "learned/files/policy_file_facts.h"
#include "learned/files/loaded_parameters.h"
#include "learned/methods.h"
#include "learned/training/optimizer.h"
#include "learned/training/ppo.h"
#include "learned/training/sampled_batch.h"
#include "learned/training/start_probes.h"
#include "learned/training/training_budget.h"
#include "learned/training/training_loop.h"
#include "learned/files/run_files.h"
#include "learned/training/one_line_errors.h"
#include "sim/environment.h"
#include "sim/simulator.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stop_request.h"
#include "learned/networks/policy_file.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;

// The one network a batch training shares between its graphs' policies:
// GDP's or Mars's, with the policy file it is written as.
class SharedNetwork {
 public:
  virtual ~SharedNetwork() = default;
  virtual torch::nn::Module& module() = 0;
  virtual std::unique_ptr<Policy> PolicyFor(const PlacementProblem& problem, const LearnedOptions& options) = 0;
  virtual void WritePolicyFile(const std::string& path, const PolicyFileFacts& facts) = 0;
};

class GdpSharedNetwork : public SharedNetwork {
 public:
  explicit GdpSharedNetwork(GdpNet net) : net_(std::move(net)) {}
  torch::nn::Module& module() override { return *net_; }
  std::unique_ptr<Policy> PolicyFor(const PlacementProblem& problem, const LearnedOptions& options) override {
    return MakeGdpPolicyWithNet(problem, net_, options);
  }
  void WritePolicyFile(const std::string& path, const PolicyFileFacts& facts) override { SaveGdpPolicyFile(path, net_, facts); }

 private:
  GdpNet net_;
};

class MarsSharedNetwork : public SharedNetwork {
 public:
  explicit MarsSharedNetwork(MarsNet net) : net_(std::move(net)) {}
  torch::nn::Module& module() override { return *net_; }
  std::unique_ptr<Policy> PolicyFor(const PlacementProblem& problem, const LearnedOptions& options) override {
    return MakeMarsPolicyWithNet(problem, net_, options);
  }
  void WritePolicyFile(const std::string& path, const PolicyFileFacts& facts) override { SaveMarsPolicyFile(path, net_, facts); }

 private:
  MarsNet net_;
};

// A fresh network of options' method over the vocabulary of `graphs` (or,
// for Mars with an encoder file, the encoder's).
std::unique_ptr<SharedNetwork> MakeSharedNetwork(const LearnedOptions& options, const std::vector<const Graph*>& graphs, int64_t devices) {
  if (options.method == "mars") {
    return std::make_unique<MarsSharedNetwork>(
        MarsNet(MarsStartEncoder(options, graphs), MarsPlacerArchitectureOf(options, devices), options.unit.start_bias_or_default()));
  }
  return std::make_unique<GdpSharedNetwork>(MakeGdpNet(options, devices, graphs));
}

// One graph of the batch: its policy (sharing the network), environment,
// failing signal and baseline, and the best placement seen.
struct TrainingGraph {
  int64_t graph_index = 0;
  int64_t cluster_index = 0;
  int64_t last_used = 0;  // the update that last sampled it
  // A pair the trainer built owns its cluster, cost model, simulator and
  // problem; one given by the caller owns none.
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<Simulator> simulator;
  std::unique_ptr<PlacementProblem> owned_problem;
  const PlacementProblem* problem = nullptr;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<Environment> environment;
  double failing_reward = 0;
  double baseline = 0;
  double best_time_s = 0;  // 0: none ran yet
};

// The training loop's mode that trains one network across graphs
// (learned/training/training_loop.h): one controller, whose every update
// samples and measures each graph's K placements and hands them all to
// Algorithm::UpdateAcrossGraphs; the output is a policy file with a
// checkpoint beside it.
class BatchTrainer : public TrainingMode {
 public:
  // Every problem every update, all on one cluster (the caller's).
  BatchTrainer(const std::vector<PlacementProblem>& problems, const BatchTrainOptions& options)
      : options_(options), learned_(options.learned), budget_(options.learned) {
    if (problems.empty()) throw Error("train: no graphs to train on (--graphs)");
    CheckOptions();
    const Cluster& cluster = problems.front().cluster;
    for (const PlacementProblem& p : problems) {
      if (&p.cluster != &cluster) throw Error("train: every graph is placed on the same cluster");
    }
    cluster_names_ = cluster.name;
    for (const PlacementProblem& p : problems) graph_list_.push_back(&p.graph);
    MakeNetwork(cluster);
    for (size_t i = 0; i < problems.size(); ++i) {
      TrainingGraph g;
      g.graph_index = static_cast<int64_t>(i);
      g.problem = &problems[i];
      Equip(g);
      graphs_.push_back(std::move(g));
    }
    Finish(*graphs_.front().policy);
  }

  // Each update, every graph on one cluster of the source (pairs built as
  // they are first needed).
  BatchTrainer(const GraphsAndClusters& inputs, const BatchTrainOptions& options)
      : options_(options), learned_(options.learned), budget_(options.learned), inputs_(&inputs) {
    if (inputs.graphs.empty()) throw Error("train: no graphs to train on (--graphs)");
    if (!inputs.clusters || inputs.clusters->count() < 1) throw Error("train: no clusters to train on (--cluster)");
    CheckOptions();
    cluster_names_ = inputs.clusters->Describe();
    graph_list_ = inputs.graphs;
    const Cluster first = inputs.clusters->At(0);
    const bool any_cluster = learned_.method == "gdp" && learned_.gdp.network.head == "devices";
    if (!any_cluster) {
      // A fixed head's logits are the devices of one cluster: every cluster
      // must have its device count and kinds (checked before training).
      const int64_t checked = std::min<int64_t>(inputs.clusters->count(), 4096);
      for (int64_t i = 1; i < checked; ++i) {
        const Cluster other = inputs.clusters->At(i);
        bool same = other.num_devices() == first.num_devices();
        for (int32_t d = 0; same && d < first.num_devices(); ++d) same = other.devices[d].kind == first.devices[d].kind;
        if (!same) {
          throw Error("train: cluster '" + ForMessage(other.name) + "' has other devices than '" + ForMessage(first.name) +
                      "'; a policy with a fixed head places on one device count and kinds (--method gdp --gdp-head devices takes any)");
        }
      }
    }
    fixed_kinds_of_ = any_cluster ? std::optional<Cluster>() : std::optional<Cluster>(first);
    MakeNetwork(first);
    TrainingGraph& g = PairFor(0, 0);
    Finish(*g.policy);
  }

  void CheckOptions() {
    if (options_.policy_out.empty()) throw Error("train: no policy file to write (-o)");
    if (learned_.method != "gdp" && learned_.method != "mars") throw Error("train: only --method gdp or mars trains a policy across graphs");
    if (!learned_.policy_file.empty()) throw Error("train: starts from a fresh network (--policy is for `place`)");
    ValidateLearnedOptions(learned_);
    if (fs::is_directory(options_.policy_out)) throw Error(ForMessage(options_.policy_out) + ": is a folder, not a policy file (-o)");
  }

  void MakeNetwork(const Cluster& cluster) {
    torch::manual_seed(learned_.seed);
    net_ = MakeSharedNetwork(learned_, graph_list_, cluster.num_devices());
    grade_failures_ = GradesFailures(learned_);
  }

  // Every policy holds the same network: the first one's parameters are
  // the network's (and its start placement, which has no gradient).
  void Finish(Policy& first) {
    optimizer_ = MakePolicyOptimizer(first, learned_);
    generator_ = at::make_generator<at::CPUGeneratorImpl>(learned_.seed * 1000003ull);
    algorithm_ = MakeAlgorithm(learned_);
  }

  // A pair's policy (sharing the network), environment and failing signal.
  void Equip(TrainingGraph& g) {
    const int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    g.policy = net_->PolicyFor(*g.problem, learned_);
    g.environment = MakeTrainingEnvironment(*g.problem, learned_, learned_.worker_threads > 0 ? learned_.worker_threads : cores, grade_failures_);
    g.failing_reward = FailingRewardOf(*g.problem, learned_);
    g.baseline = g.failing_reward;
  }

  // The live pair of graph `graph` on the source's cluster `cluster`, built
  // (and its start probed, unless `probe` is false) if it is not live; the
  // least recently used pair goes when kMaxLivePairs are.
  TrainingGraph& PairFor(int64_t graph, int64_t cluster, bool probe = false) {
    for (TrainingGraph& g : graphs_) {
      if (g.graph_index == graph && g.cluster_index == cluster) return g;
    }
    if (static_cast<int64_t>(graphs_.size()) >= kMaxLivePairs) {
      auto oldest = std::min_element(graphs_.begin(), graphs_.end(),
                                     [](const TrainingGraph& a, const TrainingGraph& b) { return a.last_used < b.last_used; });
      graphs_.erase(oldest);
    }
    TrainingGraph g;
    g.graph_index = graph;
    g.cluster_index = cluster;
    g.last_used = update_;
    const Graph& of = *graph_list_[graph];
    g.cluster = std::make_unique<Cluster>(inputs_->clusters->At(cluster));
    CheckClusterCanRun(of, *g.cluster);
    g.cost = std::make_unique<CostModel>(inputs_->cost_model(of, *g.cluster));
    g.simulator = std::make_unique<Simulator>(of, *g.cluster, *g.cost);
    g.owned_problem = std::make_unique<PlacementProblem>(PlacementProblem{of, *g.cluster, *g.cost, *g.simulator, learned_.seed});
    g.problem = g.owned_problem.get();
    Equip(g);
    graphs_.push_back(std::move(g));
    if (probe) ProbeStart(graphs_.back());
    return graphs_.back();
  }

  // The pairs update `update` samples: every caller-given problem, or each
  // graph on its cluster of the cycle.
  std::vector<TrainingGraph*> PairsOf(int64_t update) {
    std::vector<TrainingGraph*> pairs;
    if (inputs_ == nullptr) {
      for (TrainingGraph& g : graphs_) pairs.push_back(&g);
      return pairs;
    }
    const int64_t G = static_cast<int64_t>(graph_list_.size()), C = inputs_->clusters->count();
    // Indices first, then pairs: building one may evict another.
    std::vector<std::pair<int64_t, int64_t>> keys;
    for (int64_t g = 0; g < G; ++g) {
      keys.emplace_back(g, static_cast<int64_t>((static_cast<uint64_t>(update) + g + learned_.seed) % static_cast<uint64_t>(C)));
    }
    for (const auto& [g, c] : keys) PairFor(g, c, /*probe=*/true).last_used = update;
    for (const auto& [g, c] : keys) pairs.push_back(&PairFor(g, c));
    return pairs;
  }

  std::string PairName(const TrainingGraph& g) const {
    if (inputs_ == nullptr || inputs_->clusters->count() == 1) return g.problem->graph.name;
    return g.problem->graph.name + "@" + g.problem->cluster.name;
  }

  BatchTrainResult Run(const std::function<void(const BatchTrainProgress&)>& on_update) {
    budget_.Start();
    on_update_ = on_update;
    RunTrainingLoop(*this);
    RemoveTemporariesBeside(options_.policy_out, /*only_this_process=*/true);
    BatchTrainResult result;
    result.updates = update_;
    result.samples = samples_;
    result.seconds = Seconds();
    for (const TrainingGraph& g : graphs_) {
      BatchGraphProgress p;
      p.graph = PairName(g);
      p.best_step_time_s = g.best_time_s;
      result.graphs.push_back(p);
    }
    return result;
  }

  void Start() override {
    if (options_.resume) {
      LoadCheckpoint();
    } else {
      try {
        for (TrainingGraph& g : graphs_) ProbeStart(g);
      } catch (const Stopped&) {
        // A stop during the probes: the policy as it starts is written.
      }
    }
    // A killed training leaves its temporary files; the next one in the
    // folder removes them (and each run its own at the end).
    RemoveTemporariesBeside(options_.policy_out, /*only_this_process=*/false);
    budget_.CheckpointWritten();
  }

  int32_t num_controllers() const override { return 1; }
  bool Done() const override { return budget_.Done(update_, samples_); }

  void Step(int32_t /*controller*/) override {
    std::optional<BatchTrainProgress> progress = UpdateUnlessStopped();
    if (!progress) return;
    if (on_update_) on_update_(*progress);
    if (budget_.CheckpointDue(update_)) Save();
  }

  void Finish() override { Save(); }

 private:
  double Seconds() const { return budget_.Seconds(); }

  void ProbeStart(TrainingGraph& g) {
    const MeasuredProbes probes = MeasureStartProbes(*g.policy, *g.environment);
    for (const Outcome& outcome : probes.outcomes) {
      if (outcome.ok && (g.best_time_s == 0 || outcome.step_time_s < g.best_time_s)) g.best_time_s = outcome.step_time_s;
    }
    samples_ += static_cast<int64_t>(probes.outcomes.size());
  }

  // One update, or none: a stop in the middle of one (each long loop polls
  // and throws Stopped) drops it, and puts back what it had moved, so that
  // the checkpoint written next is the one of the last whole update.
  std::optional<BatchTrainProgress> UpdateUnlessStopped() {
    const torch::Tensor generator_before = generator_.get_state();
    const int64_t samples_before = samples_;
    std::vector<TrainingGraph*> pairs;
    std::vector<double> baselines_before;
    try {
      pairs = PairsOf(update_);
      for (const TrainingGraph* g : pairs) baselines_before.push_back(g->baseline);
      return Update(pairs);
    } catch (const Stopped&) {
      generator_.set_state(generator_before);
      samples_ = samples_before;
      for (size_t i = 0; i < baselines_before.size(); ++i) pairs[i]->baseline = baselines_before[i];
      return std::nullopt;
    }
  }

  // One update over the K placements of each pair.
  BatchTrainProgress Update(const std::vector<TrainingGraph*>& pairs) {
    std::vector<GraphBatch> batches(pairs.size());
    BatchTrainProgress progress;
    for (size_t i = 0; i < pairs.size(); ++i) {
      TrainingGraph& g = *pairs[i];
      GraphBatch& b = batches[i];
      b.policy = g.policy.get();
      b.baseline = &g.baseline;
      b.pass = g.policy->Begin();
      SampledBatch sampled = SampleAndMeasure(*g.policy, *b.pass, *g.environment, generator_, update_,
                                              static_cast<int32_t>(i), learned_, g.failing_reward, grade_failures_);
      for (const Outcome& outcome : sampled.outcomes) {
        if (outcome.ok && (g.best_time_s == 0 || outcome.step_time_s < g.best_time_s)) g.best_time_s = outcome.step_time_s;
      }
      b.batch = std::move(sampled.used);
      samples_ += static_cast<int64_t>(sampled.outcomes.size());
      BatchGraphProgress p;
      p.graph = PairName(g);
      p.best_step_time_s = g.best_time_s;
      p.mean_step_time_s = sampled.ran > 0 ? sampled.sum_time_s / sampled.ran : 0;
      p.failed_fraction = 1.0 - static_cast<double>(sampled.ran) / static_cast<double>(sampled.outcomes.size());
      progress.graphs.push_back(p);
    }
    algorithm_->UpdateAcrossGraphs(batches, [&] {
      torch::nn::utils::clip_grad_norm_(graphs_.front().policy->module().parameters(), learned_.grad_clip_norm);
      SetLearningRates(*optimizer_, ScheduledLearningRates(learned_, update_));
      optimizer_->step();
    });
    ++update_;
    progress.update = update_;
    progress.samples = samples_;
    progress.seconds = Seconds();
    return progress;
  }

  std::string CheckpointPath() const { return CheckpointBeside(options_.policy_out); }

  // The policy file and the training checkpoint, each replaced atomically.
  void Save() {
    const Cluster& cluster = graphs_.front().problem->cluster;
    std::vector<std::string> names;
    for (const Graph* g : graph_list_) names.push_back(g->name);
    const bool any_cluster = learned_.method == "gdp" && learned_.gdp.network.head == "devices";
    PolicyFileFacts file_facts = PolicyFileFactsFor(fixed_kinds_of_ ? *fixed_kinds_of_ : cluster, std::move(names), update_);
    file_facts.cluster_name = cluster_names_;
    if (any_cluster) file_facts.device_kinds.clear();  // bound to no cluster
    net_->WritePolicyFile(options_.policy_out, file_facts);

    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive net_archive;
    net_->module().save(net_archive);
    archive.write("net", net_archive);
    WriteOptimizerState(archive, *optimizer_);
    WriteGeneratorState(archive, "generator", generator_);
    nlohmann::json graphs = nlohmann::json::array();
    int64_t i = 0;
    for (const TrainingGraph& g : graphs_) {
      archive.write("start_" + std::to_string(i++), StartOf(g));
      graphs.push_back({{"name", g.problem->graph.name},
                        {"num_ops", g.problem->graph.num_ops()},
                        {"graph_index", g.graph_index},
                        {"cluster_index", g.cluster_index},
                        {"last_used", g.last_used},
                        {"baseline", g.baseline},
                        {"best_time_s", g.best_time_s}});
    }
    std::ostringstream tensors;
    archive.save_to(tensors);
    CheckpointParts parts;
    parts.facts = {{"method", learned_.method + "-batch"},
                   {"num_devices", any_cluster ? 0 : cluster.num_devices()},
                   {"clusters", cluster_names_},
                   {"update", update_},
                   {"samples", samples_},
                   {"seconds", Seconds()},
                   {"graphs", graphs}};
    parts.tensors = tensors.str();
    WriteCheckpointFile(CheckpointPath(), SealCheckpoint(parts));
    budget_.CheckpointWritten();
  }

  static torch::Tensor StartOf(const TrainingGraph& g) {
    for (const auto& item : g.policy->module().named_parameters(/*recurse=*/false)) {
      if (item.key() == "start") return item.value();
    }
    throw Error("internal: a policy without a start placement");
  }

  void LoadCheckpoint() {
    const std::string path = CheckpointPath();
    if (!fs::exists(path)) throw Error(ForMessage(path) + ": no training checkpoint to resume from");
    CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path));
    const CheckpointFacts facts(path, parts.facts);
    if (!facts.facts().contains("method") || facts.facts()["method"] != learned_.method + "-batch") {
      facts.Fail("not a checkpoint of `devplace train --method " + learned_.method + "`");
    }
    const bool any_cluster = learned_.method == "gdp" && learned_.gdp.network.head == "devices";
    if (facts.Integer("num_devices", 0, INT32_MAX) != (any_cluster ? 0 : graphs_.front().problem->cluster.num_devices())) {
      facts.Fail("checkpoint is for a cluster of another device count, or another head");
    }
    if (facts.facts().contains("clusters") && facts.String("clusters") != cluster_names_) {
      facts.Fail("checkpoint was trained on clusters '" + ForMessage(facts.String("clusters")) + "' (resume with the same --cluster)");
    }
    const nlohmann::json& graphs = facts.Array("graphs");
    if (inputs_ == nullptr && graphs.size() != graphs_.size()) {
      facts.Fail("checkpoint is of " + std::to_string(graphs.size()) + " graphs, not " + std::to_string(graphs_.size()));
    }
    std::vector<TrainingGraph*> restored;
    auto given = graphs_.begin();
    for (size_t i = 0; i < graphs.size(); ++i) {
      const nlohmann::json& saved = graphs[i];
      if (!saved.is_object()) facts.Fail("checkpoint's graph " + std::to_string(i + 1) + " is not an object");
      // Written before training across clusters: graphs in --graphs order, one cluster.
      const int64_t graph = saved.contains("graph_index") ? facts.IntegerOf(saved["graph_index"], "graph_index", 0, static_cast<int64_t>(graph_list_.size()) - 1)
                                                          : static_cast<int64_t>(i);
      const int64_t cluster = saved.contains("cluster_index") ? facts.IntegerOf(saved["cluster_index"], "cluster_index", 0, INT64_MAX) : 0;
      if (graph >= static_cast<int64_t>(graph_list_.size()) || !saved.contains("name") || saved["name"] != graph_list_[graph]->name ||
          !saved.contains("num_ops") || saved["num_ops"] != graph_list_[graph]->num_ops()) {
        facts.Fail("checkpoint's graph " + std::to_string(i + 1) + " is not " +
                   ForMessage(graph < static_cast<int64_t>(graph_list_.size()) ? graph_list_[graph]->name : std::string("one of --graphs")) +
                   " (resume with the same --graphs in the same order)");
      }
      TrainingGraph* g = nullptr;
      if (inputs_ == nullptr) {
        g = &*given++;
      } else {
        if (cluster >= inputs_->clusters->count()) facts.Fail("checkpoint's cluster " + std::to_string(cluster) + " is not one of --cluster");
        g = &PairFor(graph, cluster);
      }
      g->baseline = facts.NumberOf(saved.value("baseline", nlohmann::json()), "baseline", 0);
      g->best_time_s = facts.NumberOf(saved.value("best_time_s", nlohmann::json()), "best_time_s", 0);
      if (saved.contains("last_used")) g->last_used = facts.IntegerOf(saved["last_used"], "last_used", 0, INT64_MAX);
      restored.push_back(g);
    }
    update_ = facts.Integer("update", 0, INT64_MAX);
    samples_ = facts.Integer("samples", 0, INT64_MAX);
    budget_.SetSecondsBefore(facts.Number("seconds", 0));
    const ParameterShapes shapes = ShapesOf(net_->module());
    try {
      torch::serialize::InputArchive archive;
      std::istringstream in(parts.tensors);
      archive.load_from(in);
      torch::serialize::InputArchive net_archive;
      archive.read("net", net_archive);
      net_->module().load(net_archive);
      ReadOptimizerState(archive, *optimizer_);
      ReadGeneratorState(archive, "generator", generator_);
      for (size_t i = 0; i < restored.size(); ++i) {
        torch::Tensor start;
        archive.read("start_" + std::to_string(i), start);
        torch::Tensor target = StartOf(*restored[i]);
        if (start.sizes() != target.sizes()) facts.Fail("checkpoint's start placement does not fit its graph");
        torch::NoGradGuard no_grad;
        target.copy_(start);
      }
    } catch (const c10::Error&) {
      facts.Fail("checkpoint's tensors do not load, or are of another architecture");
    }
    if (const std::string problem = LoadedParametersProblem(net_->module(), shapes); !problem.empty()) {
      facts.Fail("checkpoint's network " + problem);
    }
  }

  const BatchTrainOptions& options_;
  const LearnedOptions& learned_;
  TrainingBudget budget_;
  std::unique_ptr<Algorithm> algorithm_;
  std::unique_ptr<SharedNetwork> net_;
  // Live pairs; a list, so that a pair stays where it is while others come and go.
  std::list<TrainingGraph> graphs_;
  const GraphsAndClusters* inputs_ = nullptr;  // null: the caller's problems
  std::vector<const Graph*> graph_list_;
  std::string cluster_names_;
  std::optional<Cluster> fixed_kinds_of_;  // a fixed head's cluster (pairs mode)
  std::unique_ptr<torch::optim::Adam> optimizer_;
  torch::Generator generator_;
  bool grade_failures_ = false;
  std::function<void(const BatchTrainProgress&)> on_update_;
  int64_t update_ = 0;
  int64_t samples_ = 0;
};

}  // namespace

namespace {

class ListedClusters : public ClusterSource {
 public:
  explicit ListedClusters(std::vector<Cluster> clusters) : clusters_(std::move(clusters)) {
    if (clusters_.empty()) throw Error("train: no clusters to train on");
  }
  int64_t count() const override { return static_cast<int64_t>(clusters_.size()); }
  Cluster At(int64_t i) const override { return clusters_.at(static_cast<size_t>(i % count())); }
  std::string Describe() const override {
    std::string names;
    for (const Cluster& c : clusters_) names += (names.empty() ? "" : ",") + c.name;
    return names;
  }

 private:
  std::vector<Cluster> clusters_;
};

class GeneratorClusters : public ClusterSource {
 public:
  GeneratorClusters(const ClusterGeneratorOptions& options, uint64_t seed, int64_t count)
      : options_(options), seed_(seed), count_(count) {
    if (count_ < 1) throw Error("train: --random-clusters must be at least 1, got " + std::to_string(count_));
    CheckClusterGeneratorOptions(options_);
  }
  int64_t count() const override { return count_; }
  Cluster At(int64_t i) const override { return GenerateClusterAt(options_, seed_, static_cast<uint64_t>(i % count_)); }
  // Recorded in the policy file: enough to draw the same clusters again.
  std::string Describe() const override {
    return std::to_string(count_) + " generated clusters (profile " + options_.profile_name + ", seed " + std::to_string(seed_) + ", " +
           std::to_string(options_.min_devices) + "-" + std::to_string(options_.max_devices) + " devices)";
  }

 private:
  ClusterGeneratorOptions options_;
  uint64_t seed_;
  int64_t count_;
};

}  // namespace

std::shared_ptr<const ClusterSource> GeneratedClusters(const ClusterGeneratorOptions& options, uint64_t seed, int64_t count) {
  return std::make_shared<GeneratorClusters>(options, seed, count);
}

std::shared_ptr<const ClusterSource> ClusterList(std::vector<Cluster> clusters) {
  return std::make_shared<ListedClusters>(std::move(clusters));
}

BatchTrainResult TrainAcrossGraphsAndClusters(const GraphsAndClusters& inputs, const BatchTrainOptions& options,
                                             const std::function<void(const BatchTrainProgress&)>& on_update) {
  ConfigureProcessForTraining();
  BatchTrainResult result;
  RunWithOneLineTorchErrors("train", [&] {
    BatchTrainer trainer(inputs, options);
    result = trainer.Run(on_update);
  });
  return result;
}

BatchTrainResult TrainAcrossGraphs(const std::vector<PlacementProblem>& problems, const BatchTrainOptions& options,
                              const std::function<void(const BatchTrainProgress&)>& on_update) {
  ConfigureProcessForTraining();
  BatchTrainResult result;
  RunWithOneLineTorchErrors("train", [&] {
    BatchTrainer trainer(problems, options);
    result = trainer.Run(on_update);
  });
  return result;
}

}  // namespace devplace
