#include "learned/training/batch_trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>


#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <cstdlib>
#include <cstdio>
#include <list>
#include <map>
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
#include "learned/training/parameters_for_tests.h"
#include "learned/training/ppo.h"
#include "learned/training/sampled_batch.h"
#include "learned/training/search_targets.h"
#include "learned/training/start_probes.h"
#include "learned/training/training_budget.h"
#include "learned/training/training_loop.h"
#include "learned/training/training_ranks.h"
#include "learned/files/run_files.h"
#include "learned/training/one_line_errors.h"
#include "sim/environment.h"
#include "sim/simulator.h"
#include "util/error.h"
#include "util/files.h"
#include "util/random.h"
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
  bool probed = false;     // its start probes were measured (or restored)
  // Across ranks: changed since rank 0 last heard of it; its start
  // placement not yet sent to rank 0.
  bool changed = true;
  bool start_sent = false;
  double mean_time_s = 0;  // of the last update's placements that ran
  double failed_fraction = 0;
  // With --imitate-search: what the policy imitates on this pair (found
  // when the pair is first sampled; found again after a resume, alike).
  std::optional<Decision> imitation_target;
  std::vector<double> imitation_weights;  // per choice of the target; empty: alike
};

// Across ranks, what rank 0 knows of a pair another rank trains: enough to
// write it into the checkpoint and the progress lines.
struct RemotePair {
  std::string name;
  int64_t last_used = 0;
  double baseline = 0;
  double best_time_s = 0;
  double mean_time_s = 0;
  double failed_fraction = 0;
  torch::Tensor start;
};

// The sampling stream of graph `graph` at update `update`: its own, so that
// a graph samples the same placements whichever rank trains it and
// whichever graphs share the update.
uint64_t SamplingSeed(uint64_t seed, int64_t update, int64_t graph) {
  Random mix(seed * 1000003ull);
  mix.set_state(mix.NextU64() ^ static_cast<uint64_t>(update));
  mix.set_state(mix.NextU64() ^ static_cast<uint64_t>(graph));
  return mix.NextU64();
}

nlohmann::json TensorToJson(const torch::Tensor& t) {
  const torch::Tensor flat = t.detach().to(torch::kFloat64).contiguous().reshape({-1});
  return {{"shape", t.sizes().vec()}, {"values", std::vector<double>(flat.data_ptr<double>(), flat.data_ptr<double>() + flat.numel())}};
}

torch::Tensor TensorFromJson(const nlohmann::json& j, torch::ScalarType type) {
  std::vector<double> values = j.at("values").get<std::vector<double>>();
  const std::vector<int64_t> shape = j.at("shape").get<std::vector<int64_t>>();
  return torch::tensor(values, torch::kFloat64).reshape(shape).to(type);
}

// The training loop's mode that trains one network across graphs
// (learned/training/training_loop.h): one controller, whose every update
// samples and measures each graph's K placements and hands them all to
// Algorithm::UpdateAcrossGraphs; the output is a policy file with a
// checkpoint beside it.
class BatchTrainer : public TrainingMode {
 public:
  // Every problem every update, all on one cluster (the caller's).
  BatchTrainer(const std::vector<PlacementProblem>& problems, const BatchTrainOptions& options)
      : options_(options), learned_(options.learned), budget_(options.learned), ranks_(options.ranks.get()) {
    if (problems.empty()) throw Error("train: no graphs to train on (--graphs)");
    CheckOptions();
    const Cluster& cluster = problems.front().cluster;
    for (const PlacementProblem& p : problems) {
      if (&p.cluster != &cluster) throw Error("train: every graph is placed on the same cluster");
    }
    cluster_names_ = cluster.name;
    for (const PlacementProblem& p : problems) graph_list_.push_back(&p.graph);
    CheckRanks();
    MakeNetwork(cluster);
    for (size_t i = 0; i < problems.size(); ++i) {
      if (!RankTrainsGraph(ranks_, static_cast<int64_t>(i))) continue;
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
      : options_(options), learned_(options.learned), budget_(options.learned), inputs_(&inputs), ranks_(options.ranks.get()) {
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
    CheckRanks();
    MakeNetwork(first);
    // Rank r's first graph is graph r: the network and optimiser are alike
    // on every rank (a policy's start placement is no optimiser's).
    TrainingGraph& g = PairFor(ranks_ ? ranks_->rank() : 0, 0);
    Finish(*g.policy);
  }

  void CheckOptions() {
    if (options_.policy_out.empty()) throw Error("train: no policy file to write (-o)");
    if (learned_.method != "gdp" && learned_.method != "mars") throw Error("train: only --method gdp or mars trains a policy across graphs");
    if (!learned_.policy_file.empty()) throw Error("train: starts from a fresh network (--policy is for `place`)");
    ValidateLearnedOptions(learned_);
    if (fs::is_directory(options_.policy_out)) throw Error(ForMessage(options_.policy_out) + ": is a folder, not a policy file (-o)");
  }

  // Every rank trains at least one graph.
  void CheckRanks() const {
    if (ranks_ && options_.imitate_search_evaluations > 0) {
      throw Error("train: --imitate-search is not built across processes yet (WORLD_SIZE=" + std::to_string(ranks_->size()) + ")");
    }
    if (ranks_ && ranks_->size() > static_cast<int32_t>(graph_list_.size())) {
      throw Error("train: WORLD_SIZE=" + std::to_string(ranks_->size()) + " is more than the " + std::to_string(graph_list_.size()) +
                  " graphs of --graphs (each rank trains at least one graph)");
    }
  }

  bool IsController() const { return ranks_ == nullptr || ranks_->rank() == 0; }

  void MakeNetwork(const Cluster& cluster) {
    torch::manual_seed(learned_.seed);
    net_ = MakeSharedNetwork(learned_, graph_list_, cluster.num_devices());
    grade_failures_ = GradesFailures(learned_);
  }

  // Every policy holds the same network: the first one's parameters are
  // the network's (and its start placement, which has no gradient).
  void Finish(Policy& first) {
    optimizer_ = MakePolicyOptimizer(first, learned_);
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
      if (g.graph_index == graph && g.cluster_index == cluster) {
        if (probe && !g.probed) ProbeStart(g);
        return g;
      }
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
      if (!RankTrainsGraph(ranks_, g)) continue;
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

  // Every pair's best so far, this rank's and (on rank 0) the others', in
  // graph order across ranks.
  std::vector<BatchGraphProgress> AllGraphs(bool with_update) const {
    std::vector<std::pair<std::pair<int64_t, int64_t>, BatchGraphProgress>> rows;
    for (const TrainingGraph& g : graphs_) {
      BatchGraphProgress p{PairName(g), g.best_time_s, with_update ? g.mean_time_s : 0, with_update ? g.failed_fraction : 0};
      rows.push_back({{g.graph_index, g.cluster_index}, p});
    }
    for (const auto& [key, r] : remote_) {
      rows.push_back({key, BatchGraphProgress{r.name, r.best_time_s, with_update ? r.mean_time_s : 0, with_update ? r.failed_fraction : 0}});
    }
    if (ranks_) std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<BatchGraphProgress> graphs;
    for (auto& row : rows) graphs.push_back(std::move(row.second));
    return graphs;
  }

  BatchTrainResult Run(const std::function<void(const BatchTrainProgress&)>& on_update) {
    budget_.Start();
    on_update_ = on_update;
    DumpParametersForTests("initial");
    RunTrainingLoop(*this);
    if (IsController()) RemoveTemporariesBeside(options_.policy_out, /*only_this_process=*/true);
    DumpParametersForTests("trained");
    BatchTrainResult result;
    result.updates = update_;
    result.samples = samples_;
    result.seconds = Seconds();
    result.graphs = AllGraphs(/*with_update=*/false);
    return result;
  }

  void Start() override {
    if (options_.resume) {
      LoadCheckpoint();
    } else {
      try {
        // Across clusters the first graph's pair is probed now, the others
        // when an update first needs them.
        for (TrainingGraph& g : graphs_) {
          if (inputs_ == nullptr || g.graph_index == 0) ProbeStart(g);
        }
      } catch (const Stopped&) {
        // A stop during the probes: the policy as it starts is written.
      }
    }
    // A killed training leaves its temporary files; the next one in the
    // folder removes them (and each run its own at the end).
    if (IsController()) RemoveTemporariesBeside(options_.policy_out, /*only_this_process=*/false);
    budget_.CheckpointWritten();
    if (ranks_) ExchangeWithRankZero(nullptr);
  }

  int32_t num_controllers() const override { return 1; }
  // Across ranks, rank 0 decides (its clock, every rank's samples and
  // stops) and says so at every exchange.
  bool Done() const override { return ranks_ ? done_ : budget_.Done(update_, samples_); }

  void Step(int32_t /*controller*/) override {
    std::optional<BatchTrainProgress> progress = UpdateUnlessStopped();
    bool checkpoint_due = progress && budget_.CheckpointDue(update_);
    if (ranks_) checkpoint_due = ExchangeWithRankZero(progress ? &*progress : nullptr);
    if (!progress || !IsController()) return;
    if (on_update_) on_update_(*progress);
    if (checkpoint_due) Save();
  }

  void Finish() override {
    if (IsController()) Save();
  }

 private:
  double Seconds() const { return budget_.Seconds(); }

  void ProbeStart(TrainingGraph& g) {
    const MeasuredProbes probes = MeasureStartProbes(*g.policy, *g.environment);
    g.probed = true;
    g.changed = true;
    g.start_sent = false;
    for (const Outcome& outcome : probes.outcomes) {
      if (outcome.ok && (g.best_time_s == 0 || outcome.step_time_s < g.best_time_s)) g.best_time_s = outcome.step_time_s;
    }
    samples_ += static_cast<int64_t>(probes.outcomes.size());
  }

  // One update, or none: a stop in the middle of one (each long loop polls
  // and throws Stopped) drops it, and puts back what it had moved, so that
  // the checkpoint written next is the one of the last whole update.
  // Across ranks a stop on one rank drops the update on every rank (the
  // gradients' sum says so).
  std::optional<BatchTrainProgress> UpdateUnlessStopped() {
    const int64_t samples_before = samples_;
    std::vector<TrainingGraph*> pairs;
    std::vector<double> baselines_before;
    try {
      bool stopped_here = false;
      try {
        pairs = PairsOf(update_);
      } catch (const Stopped&) {
        if (!ranks_) throw;
        stopped_here = true;
      }
      for (const TrainingGraph* g : pairs) baselines_before.push_back(g->baseline);
      return Update(pairs, stopped_here);
    } catch (const Stopped&) {
      samples_ = samples_before;
      for (size_t i = 0; i < baselines_before.size(); ++i) pairs[i]->baseline = baselines_before[i];
      return std::nullopt;
    }
  }

  // One update over the K placements of each pair.
  // (Each graph's samples come from its own stream, and its noise from
  // stream graph_index: a graph is sampled and measured alike on any rank.)
  BatchTrainProgress Update(const std::vector<TrainingGraph*>& pairs, bool stopped_here) {
    std::vector<GraphBatch> batches(pairs.size());
    BatchTrainProgress progress;
    try {
      // Targets first: a stop while mcmc finds one drops the update before
      // any optimiser step.
      for (TrainingGraph* g : pairs) {
        if (options_.imitate_search_evaluations > 0 && !g->imitation_target && !stopped_here) {
          g->imitation_target = SearchTarget(*g->problem, *g->policy, options_.imitate_search_evaluations);
          g->imitation_weights = ChoiceWeights(g->problem->graph, *g->policy, options_.imitation_by_flops);
        }
      }
      for (size_t i = 0; i < pairs.size() && !stopped_here; ++i) {
        TrainingGraph& g = *pairs[i];
        GraphBatch& b = batches[i];
        b.policy = g.policy.get();
        b.baseline = &g.baseline;
        b.pass = g.policy->Begin();
        torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(SamplingSeed(learned_.seed, update_, g.graph_index));
        SampledBatch sampled = SampleAndMeasure(*g.policy, *b.pass, *g.environment, generator, update_,
                                                static_cast<int32_t>(g.graph_index), learned_, g.failing_reward, grade_failures_);
        for (const Outcome& outcome : sampled.outcomes) {
          if (outcome.ok && (g.best_time_s == 0 || outcome.step_time_s < g.best_time_s)) g.best_time_s = outcome.step_time_s;
        }
        b.batch = std::move(sampled.used);
        samples_ += static_cast<int64_t>(sampled.outcomes.size());
        g.mean_time_s = sampled.ran > 0 ? sampled.sum_time_s / sampled.ran : 0;
        g.failed_fraction = 1.0 - static_cast<double>(sampled.ran) / static_cast<double>(sampled.outcomes.size());
        g.changed = true;
        progress.graphs.push_back(BatchGraphProgress{PairName(g), g.best_time_s, g.mean_time_s, g.failed_fraction});
      }
    } catch (const Stopped&) {
      if (!ranks_) throw;
      stopped_here = true;
    }
    if (ranks_) {
      // A stopped rank still takes part in the sum, to say so; it needs a
      // policy for the network's shapes.
      for (GraphBatch& b : batches) {
        if (b.policy == nullptr) b.policy = graphs_.front().policy.get();
      }
      if (batches.empty()) batches.emplace_back().policy = graphs_.front().policy.get();
    }
    // Distilling search, each optimiser step's loss is the reinforcement
    // loss plus the imitation loss; an update whose samples were all alike
    // (no advantage, no step: a policy that has settled on one placement)
    // still takes the imitation step.
    const bool imitating = options_.imitate_search_evaluations > 0 && !pairs.empty() && !stopped_here;
    bool stepped = false;
    auto apply = [&] {
      if (imitating) {
        const double per_unit = AddImitationGradients(pairs);
        if (!stepped) progress.imitation_loss_per_unit = per_unit;
      }
      torch::nn::utils::clip_grad_norm_(graphs_.front().policy->module().parameters(), learned_.grad_clip_norm);
      SetLearningRates(*optimizer_, ScheduledLearningRates(learned_, update_));
      optimizer_->step();
      stepped = true;
    };
    algorithm_->UpdateAcrossGraphs(batches, apply, UpdateAcrossRanks{ranks_, stopped_here});
    if (imitating && !stepped) {
      graphs_.front().policy->module().zero_grad();
      apply();
    }
    ++update_;
    progress.update = update_;
    progress.samples = samples_;
    progress.seconds = Seconds();
    return progress;
  }

  // Adds the gradient of the imitation loss, the weighted mean over the
  // sampled pairs of -log p(target), to the gradients in the network (one
  // more pass of the encoder per pair), and returns the loss per unit, the
  // mean over the pairs, for the progress line.
  double AddImitationGradients(const std::vector<TrainingGraph*>& pairs) {
    torch::Tensor loss = torch::zeros({});
    double per_unit = 0;
    for (TrainingGraph* g : pairs) {
      torch::Tensor pair_loss = ImitationLoss(*g->policy->Begin(), *g->imitation_target, g->imitation_weights);
      per_unit += pair_loss.item<double>() / static_cast<double>(std::max<size_t>(1, g->imitation_target->size())) / pairs.size();
      loss = loss + pair_loss;
    }
    (loss * (options_.imitation_weight / static_cast<double>(pairs.size()))).backward();
    return per_unit;
  }

  std::string CheckpointPath() const { return CheckpointBeside(options_.policy_out); }

  // Across ranks, after the start and after every update (made or dropped,
  // alike on every rank): each worker sends rank 0 its samples, whether it
  // was asked to stop, and the pairs it changed (their baselines, bests and,
  // once, start placements: what rank 0's checkpoint and progress lines
  // need); rank 0 answers whether the training is done, the samples of all
  // ranks and whether a checkpoint is due. Returns the last (on rank 0;
  // false on the others, which write none).
  bool ExchangeWithRankZero(BatchTrainProgress* progress) {
    nlohmann::json mine = {{"samples", samples_ - samples_reported_}, {"stop", StopRequested()}};
    samples_reported_ = samples_;
    nlohmann::json pairs = nlohmann::json::array();
    for (TrainingGraph& g : graphs_) {
      if (!g.changed || IsController()) continue;
      nlohmann::json pair = {{"graph", g.graph_index}, {"cluster", g.cluster_index}, {"name", PairName(g)},
                             {"last_used", g.last_used}, {"baseline", g.baseline}, {"best", g.best_time_s},
                             {"mean", g.mean_time_s}, {"failed", g.failed_fraction}};
      if (!g.start_sent && g.probed) {
        pair["start"] = TensorToJson(StartOf(g));
        g.start_sent = true;
      }
      pairs.push_back(std::move(pair));
      g.changed = false;
    }
    mine["pairs"] = std::move(pairs);
    const std::vector<std::string> all = ranks_->ToRankZero(mine.dump());
    nlohmann::json decision;
    if (IsController()) {
      bool stop = StopRequested();
      for (size_t r = 1; r < all.size(); ++r) {
        try {
          const nlohmann::json theirs = nlohmann::json::parse(all[r]);
          samples_ += theirs.at("samples").get<int64_t>();
          stop = stop || theirs.at("stop").get<bool>();
          for (const nlohmann::json& pair : theirs.at("pairs")) MergeRemotePair(pair);
        } catch (const nlohmann::json::exception& e) {
          throw Error("train: distributed run: rank " + std::to_string(r) + "'s report is malformed: " + e.what());
        }
      }
      samples_reported_ = samples_;
      decision = {{"done", stop || budget_.Done(update_, samples_)},
                  {"samples", samples_},
                  {"checkpoint", progress != nullptr && budget_.CheckpointDue(update_)}};
      if (progress) progress->graphs = AllGraphs(/*with_update=*/true);
    }
    decision = nlohmann::json::parse(ranks_->FromRankZero(decision.dump()));
    done_ = decision.at("done").get<bool>();
    samples_ = samples_reported_ = decision.at("samples").get<int64_t>();
    if (progress) progress->samples = samples_;
    return IsController() && decision.at("checkpoint").get<bool>();
  }

  void MergeRemotePair(const nlohmann::json& pair) {
    RemotePair& r = remote_[{pair.at("graph").get<int64_t>(), pair.at("cluster").get<int64_t>()}];
    r.name = pair.at("name").get<std::string>();
    r.last_used = pair.at("last_used").get<int64_t>();
    r.baseline = pair.at("baseline").get<double>();
    r.best_time_s = pair.at("best").get<double>();
    r.mean_time_s = pair.at("mean").get<double>();
    r.failed_fraction = pair.at("failed").get<double>();
    if (pair.contains("start")) r.start = TensorFromJson(pair.at("start"), StartOf(graphs_.front()).scalar_type());
    // As many as the other ranks keep live.
    const size_t most = static_cast<size_t>(kMaxLivePairs) * static_cast<size_t>(ranks_->size() - 1);
    while (remote_.size() > most) {
      auto oldest = std::min_element(remote_.begin(), remote_.end(),
                                     [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
      remote_.erase(oldest);
    }
  }

  // DEVPLACE_TEST_TRAIN_PARAMETERS: each rank's network, PREFIX.WHEN.rankN
  // (before and after training).
  void DumpParametersForTests(const std::string& when) const {
    WriteParametersForTests("DEVPLACE_TEST_TRAIN_PARAMETERS", "." + when + ".rank" + std::to_string(ranks_ ? ranks_->rank() : 0),
                            net_->module());
  }

  // The policy file and the training checkpoint, each replaced atomically.
  void Save() {
    const Cluster& cluster = graphs_.front().problem->cluster;
    std::vector<std::string> names;
    for (const Graph* g : graph_list_) names.push_back(g->name);
    const bool any_cluster = learned_.method == "gdp" && learned_.gdp.network.head == "devices";
    PolicyFileFacts file_facts = PolicyFileFactsFor(fixed_kinds_of_ ? *fixed_kinds_of_ : cluster, std::move(names), update_);
    file_facts.cluster_name = cluster_names_;
    file_facts.imitated_search_evaluations = options_.imitate_search_evaluations;
    file_facts.imitation_weighting = options_.imitation_by_flops ? "flops" : "uniform";
    if (any_cluster) file_facts.device_kinds.clear();  // bound to no cluster
    net_->WritePolicyFile(options_.policy_out, file_facts);

    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive net_archive;
    net_->module().save(net_archive);
    archive.write("net", net_archive);
    WriteOptimizerState(archive, *optimizer_);
    // Every rank's pairs, in graph order across ranks (one process resumes
    // what several wrote, and the other way round).
    struct Row {
      std::pair<int64_t, int64_t> key;
      nlohmann::json facts;
      torch::Tensor start;
    };
    std::vector<Row> rows;
    for (const TrainingGraph& g : graphs_) {
      rows.push_back({{g.graph_index, g.cluster_index},
                      {{"name", g.problem->graph.name},
                       {"num_ops", g.problem->graph.num_ops()},
                       {"graph_index", g.graph_index},
                       {"cluster_index", g.cluster_index},
                       {"last_used", g.last_used},
                       {"baseline", g.baseline},
                       {"best_time_s", g.best_time_s}},
                      StartOf(g)});
    }
    for (const auto& [key, r] : remote_) {
      if (!r.start.defined()) continue;  // not probed yet: built afresh on resume
      const Graph& of = *graph_list_[key.first];
      rows.push_back({key,
                      {{"name", of.name},
                       {"num_ops", of.num_ops()},
                       {"graph_index", key.first},
                       {"cluster_index", key.second},
                       {"last_used", r.last_used},
                       {"baseline", r.baseline},
                       {"best_time_s", r.best_time_s}},
                      r.start});
    }
    if (ranks_) std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.key < b.key; });
    nlohmann::json graphs = nlohmann::json::array();
    int64_t i = 0;
    for (const Row& row : rows) {
      archive.write("start_" + std::to_string(i++), row.start);
      graphs.push_back(row.facts);
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
    // Across ranks only rank 0 has the file (the workers may be on other
    // hosts): it sends the bytes, or its one-line error, to every rank.
    std::string bytes;
    if (IsController()) {
      try {
        if (!fs::exists(path)) throw Error(ForMessage(path) + ": no training checkpoint to resume from");
        bytes = "ok:" + ReadTextFile(path);
      } catch (const Error& e) {
        if (!ranks_) throw;
        bytes = std::string("error:") + e.what();
      }
    }
    if (ranks_) bytes = ranks_->FromRankZero(bytes);
    if (bytes.rfind("error:", 0) == 0) throw Error(bytes.substr(6));
    CheckpointParts parts = UnsealCheckpoint(path, std::string_view(bytes).substr(3));
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
    if (inputs_ == nullptr && graphs.size() != graph_list_.size()) {
      facts.Fail("checkpoint is of " + std::to_string(graphs.size()) + " graphs, not " + std::to_string(graph_list_.size()));
    }
    // (index in the checkpoint, this rank's pair); rank 0 keeps the other
    // ranks' as remote pairs.
    std::vector<std::pair<size_t, TrainingGraph*>> restored;
    std::vector<std::pair<size_t, std::pair<int64_t, int64_t>>> remote;
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
      if (inputs_ != nullptr && cluster >= inputs_->clusters->count()) {
        facts.Fail("checkpoint's cluster " + std::to_string(cluster) + " is not one of --cluster");
      }
      const double baseline = facts.NumberOf(saved.value("baseline", nlohmann::json()), "baseline", 0);
      const double best_time_s = facts.NumberOf(saved.value("best_time_s", nlohmann::json()), "best_time_s", 0);
      const int64_t last_used = saved.contains("last_used") ? facts.IntegerOf(saved["last_used"], "last_used", 0, INT64_MAX) : 0;
      if (!RankTrainsGraph(ranks_, graph)) {
        if (!IsController()) continue;
        RemotePair& r = remote_[{graph, cluster}];
        r.name = graph_list_[graph]->name;
        if (inputs_ != nullptr && inputs_->clusters->count() > 1) r.name += "@" + inputs_->clusters->At(cluster).name;
        r.baseline = baseline;
        r.best_time_s = best_time_s;
        r.last_used = last_used;
        remote.push_back({i, {graph, cluster}});
        continue;
      }
      TrainingGraph* g = nullptr;
      if (inputs_ == nullptr) {
        for (TrainingGraph& given : graphs_) {
          if (given.graph_index == graph) g = &given;
        }
        if (g == nullptr) facts.Fail("checkpoint names graph " + std::to_string(graph + 1) + " twice");
      } else {
        g = &PairFor(graph, cluster);
      }
      g->baseline = baseline;
      g->best_time_s = best_time_s;
      if (saved.contains("last_used")) g->last_used = last_used;
      g->probed = true;
      restored.push_back({i, g});
    }
    update_ = facts.Integer("update", 0, INT64_MAX);
    samples_ = facts.Integer("samples", 0, INT64_MAX);
    samples_reported_ = samples_;
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
      for (const auto& [i, g] : restored) {
        torch::Tensor start;
        archive.read("start_" + std::to_string(i), start);
        torch::Tensor target = StartOf(*g);
        if (start.sizes() != target.sizes()) facts.Fail("checkpoint's start placement does not fit its graph");
        torch::NoGradGuard no_grad;
        target.copy_(start);
      }
      for (const auto& [i, key] : remote) {
        torch::Tensor start;
        archive.read("start_" + std::to_string(i), start);
        remote_[key].start = start;
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
  bool grade_failures_ = false;
  TrainingRanks* ranks_ = nullptr;  // null: one process
  std::map<std::pair<int64_t, int64_t>, RemotePair> remote_;  // rank 0: the other ranks' pairs, by (graph, cluster)
  int64_t samples_reported_ = 0;  // this rank's samples_ when it last exchanged
  bool done_ = false;             // across ranks: rank 0's word at the last exchange
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
