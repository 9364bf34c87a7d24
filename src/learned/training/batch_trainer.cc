#include "learned/training/batch_trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>


#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
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
  BatchTrainer(const std::vector<PlacementProblem>& problems, const BatchTrainOptions& options)
      : options_(options), learned_(options.learned), budget_(options.learned) {
    if (problems.empty()) throw Error("train: no graphs to train on (--graphs)");
    if (options.policy_out.empty()) throw Error("train: no policy file to write (-o)");
    if (learned_.method != "gdp" && learned_.method != "mars") throw Error("train: only --method gdp or mars trains a policy across graphs");
    if (!learned_.policy_file.empty()) throw Error("train: starts from a fresh network (--policy is for `place`)");
    ValidateLearnedOptions(learned_);
    const Cluster& cluster = problems.front().cluster;
    for (const PlacementProblem& p : problems) {
      if (&p.cluster != &cluster) throw Error("train: every graph is placed on the same cluster");
    }
    if (fs::is_directory(options.policy_out)) throw Error(ForMessage(options.policy_out) + ": is a folder, not a policy file (-o)");
    torch::manual_seed(learned_.seed);
    std::vector<const Graph*> graphs;
    for (const PlacementProblem& p : problems) graphs.push_back(&p.graph);
    net_ = MakeSharedNetwork(learned_, graphs, cluster.num_devices());
    const bool grade = GradesFailures(learned_);
    const int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    for (const PlacementProblem& p : problems) {
      TrainingGraph g;
      g.problem = &p;
      g.policy = net_->PolicyFor(p, learned_);
      g.environment = MakeTrainingEnvironment(p, learned_, learned_.worker_threads > 0 ? learned_.worker_threads : cores, grade);
      g.failing_reward = FailingRewardOf(p, learned_);
      g.baseline = g.failing_reward;
      graphs_.push_back(std::move(g));
    }
    grade_failures_ = grade;
    // Every policy holds the same network: the first one's parameters are
    // the network's (and its start placement, which has no gradient).
    optimizer_ = MakePolicyOptimizer(*graphs_.front().policy, learned_);
    generator_ = at::make_generator<at::CPUGeneratorImpl>(learned_.seed * 1000003ull);
    algorithm_ = MakeAlgorithm(learned_);
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
      p.graph = g.problem->graph.name;
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
    std::vector<double> baselines_before;
    for (const TrainingGraph& g : graphs_) baselines_before.push_back(g.baseline);
    try {
      return Update();
    } catch (const Stopped&) {
      generator_.set_state(generator_before);
      samples_ = samples_before;
      for (size_t i = 0; i < graphs_.size(); ++i) graphs_[i].baseline = baselines_before[i];
      return std::nullopt;
    }
  }

  // One update over every graph's K placements.
  BatchTrainProgress Update() {
    std::vector<GraphBatch> batches(graphs_.size());
    BatchTrainProgress progress;
    for (size_t i = 0; i < graphs_.size(); ++i) {
      TrainingGraph& g = graphs_[i];
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
      p.graph = g.problem->graph.name;
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
    for (const TrainingGraph& g : graphs_) names.push_back(g.problem->graph.name);
    net_->WritePolicyFile(options_.policy_out, PolicyFileFactsFor(cluster, std::move(names), update_));

    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive net_archive;
    net_->module().save(net_archive);
    archive.write("net", net_archive);
    WriteOptimizerState(archive, *optimizer_);
    WriteGeneratorState(archive, "generator", generator_);
    nlohmann::json graphs = nlohmann::json::array();
    for (size_t i = 0; i < graphs_.size(); ++i) {
      const TrainingGraph& g = graphs_[i];
      archive.write("start_" + std::to_string(i), StartOf(g));
      graphs.push_back({{"name", g.problem->graph.name},
                        {"num_ops", g.problem->graph.num_ops()},
                        {"baseline", g.baseline},
                        {"best_time_s", g.best_time_s}});
    }
    std::ostringstream tensors;
    archive.save_to(tensors);
    CheckpointParts parts;
    parts.facts = {{"method", learned_.method + "-batch"},
                   {"num_devices", cluster.num_devices()},
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
    if (facts.Integer("num_devices", 1, INT32_MAX) != graphs_.front().problem->cluster.num_devices()) {
      facts.Fail("checkpoint is for a cluster of another device count");
    }
    const nlohmann::json& graphs = facts.Array("graphs");
    if (graphs.size() != graphs_.size()) facts.Fail("checkpoint is of " + std::to_string(graphs.size()) + " graphs, not " + std::to_string(graphs_.size()));
    for (size_t i = 0; i < graphs_.size(); ++i) {
      const nlohmann::json& saved = graphs[i];
      if (!saved.is_object() || !saved.contains("name") || saved["name"] != graphs_[i].problem->graph.name ||
          !saved.contains("num_ops") || saved["num_ops"] != graphs_[i].problem->graph.num_ops()) {
        facts.Fail("checkpoint's graph " + std::to_string(i + 1) + " is not " + ForMessage(graphs_[i].problem->graph.name) +
                   " (resume with the same --graphs in the same order)");
      }
      graphs_[i].baseline = facts.NumberOf(saved.value("baseline", nlohmann::json()), "baseline", 0);
      graphs_[i].best_time_s = facts.NumberOf(saved.value("best_time_s", nlohmann::json()), "best_time_s", 0);
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
      for (size_t i = 0; i < graphs_.size(); ++i) {
        torch::Tensor start;
        archive.read("start_" + std::to_string(i), start);
        torch::Tensor target = StartOf(graphs_[i]);
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
  std::vector<TrainingGraph> graphs_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  torch::Generator generator_;
  bool grade_failures_ = false;
  std::function<void(const BatchTrainProgress&)> on_update_;
  int64_t update_ = 0;
  int64_t samples_ = 0;
};

}  // namespace

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
