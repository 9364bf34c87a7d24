#include "learned/training/mars_pretrainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>

#include "cluster/presets.h"
#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/networks/deep_graph_infomax.h"
#include "learned/files/loaded_parameters.h"
#include "learned/networks/mars_encoder.h"
#include "learned/features/op_features.h"
#include "learned/files/run_files.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A loss this much (relative) below the best counts as better; smaller
// wobbles do not reset the patience.
constexpr double kImprovement = 1e-4;

void Require(bool ok, const std::string& problem) {
  if (!ok) throw Error("pretrain: " + problem);
}

class MarsPretrainer {
 public:
  MarsPretrainer(const std::vector<const Graph*>& graphs, const MarsPretrainOptions& options)
      : options_(options), generator_(at::make_generator<at::CPUGeneratorImpl>(options.seed)) {
    Require(!graphs.empty(), "--graphs names no graph");
    Require(options.hidden >= 1 && options.hidden <= 4096, "--mars-hidden must be 1..4096");
    Require(options.layers >= 1 && options.layers <= 16, "--mars-layers must be 1..16");
    Require(std::isfinite(options.learning_rate) && options.learning_rate > 0 && options.learning_rate <= 1,
            "--learning-rate must be in (0, 1]");
    Require(options.patience >= 1, "--patience must be at least 1");
    Require(options.max_steps > 0 || options.max_seconds > 0, "no budget (--max-steps or --max-seconds)");
    // The units' features do not depend on the cluster beyond the device
    // kinds an op may use; any cluster with every kind reads them.
    const Cluster reference = *MakeClusterPreset("k80x2");
    MarsEncoderArchitecture architecture;
    architecture.hidden = options.hidden;
    architecture.layers = options.layers;
    architecture.vocabulary = UnitVocabulary(graphs);
    for (const Graph* graph : graphs) {
      const OpFeatures features = BuildOpFeatures(*graph, reference);
      inputs_.push_back(BuildUnitInputs(features, *graph, reference, architecture.vocabulary));
      names_.push_back(graph->name);
      ops_.push_back(graph->num_ops());
    }
    // The parameters start random: from the run's seed.
    torch::manual_seed(options.seed);
    encoder_ = MarsEncoder(architecture);
    discriminator_ = DgiDiscriminator(options.hidden);
    std::vector<torch::Tensor> parameters = encoder_->parameters();
    for (const torch::Tensor& p : discriminator_->parameters()) parameters.push_back(p);
    optimizer_ = std::make_unique<torch::optim::Adam>(parameters, torch::optim::AdamOptions(options.learning_rate));
    best_ = MarsEncoder(architecture);
    CopyParameters(*encoder_, *best_);
  }

  MarsPretrainResult Run(const std::function<void(const MarsPretrainProgress&)>& on_step) {
    start_ = Clock::now();
    if (options_.resume) LoadCheckpoint();
    RemoveTemporariesBeside(options_.encoder_out, /*only_this_process=*/false);
    last_save_ = Clock::now();
    MarsPretrainResult result;
    while (!BudgetSpent()) {
      // A stop in the middle of a step (it polls between graphs) drops it.
      const torch::Tensor generator_before = generator_.get_state();
      try {
        result.last = Step();
      } catch (const Stopped&) {
        generator_.set_state(generator_before);
        break;
      }
      on_step(result.last);
      if (stale_ >= options_.patience) {
        result.stopped_early = true;
        break;
      }
      if (options_.checkpoint_seconds > 0 &&
          std::chrono::duration<double>(Clock::now() - last_save_).count() >= options_.checkpoint_seconds) {
        Save();
      }
    }
    if (step_ == 0) throw Error("pretrain: the budget ended before the first step");
    SearchEnded();  // writing the encoder may take a while: the stop's watchdog waits for it
    Save();
    RemoveTemporariesBeside(options_.encoder_out, /*only_this_process=*/true);
    result.last.step = step_;
    result.last.best_loss = best_loss_;
    result.last.seconds = Seconds();
    return result;
  }

 private:
  MarsPretrainProgress Step() {
    optimizer_->zero_grad();
    torch::Tensor loss = torch::zeros({});
    double accuracy = 0;
    for (const UnitInputs& in : inputs_) {
      ThrowIfStopRequested();
      const torch::Tensor shuffle = torch::randperm(in.type.size(0), generator_, torch::kInt64);
      const torch::Tensor real = encoder_(in);
      const torch::Tensor corrupted = encoder_(in, shuffle);
      const DgiLoss l = ComputeDgiLoss(discriminator_, real, corrupted);
      loss = loss + l.loss / static_cast<double>(inputs_.size());
      accuracy += l.accuracy / static_cast<double>(inputs_.size());
    }
    loss.backward();
    optimizer_->step();
    ++step_;
    const double value = loss.item<double>();
    if (!std::isfinite(value)) throw Error("pretrain: the loss is not finite at step " + std::to_string(step_) + " (lower --learning-rate)");
    if (best_loss_ < 0 || value < best_loss_ - kImprovement * std::abs(best_loss_)) {
      best_loss_ = value;
      stale_ = 0;
      CopyParameters(*encoder_, *best_);
    } else {
      ++stale_;
    }
    MarsPretrainProgress p;
    p.step = step_;
    p.loss = value;
    p.best_loss = best_loss_;
    p.accuracy = accuracy;
    p.seconds = Seconds();
    return p;
  }

  bool BudgetSpent() const {
    if (StopRequested()) return true;
    if (options_.max_steps > 0 && step_ >= options_.max_steps) return true;
    return options_.max_seconds > 0 && Seconds() >= options_.max_seconds;
  }
  double Seconds() const { return seconds_before_ + std::chrono::duration<double>(Clock::now() - start_).count(); }

  std::string CheckpointPath() const { return CheckpointBeside(options_.encoder_out); }

  // The encoder file (the best encoder so far) and the checkpoint, each
  // replaced atomically.
  void Save() {
    MarsEncoderFileFacts facts;
    facts.graphs = names_;
    facts.steps = step_;
    facts.loss = best_loss_;
    SaveMarsEncoderFile(options_.encoder_out, best_, facts);

    torch::serialize::OutputArchive archive;
    for (auto [name, module] : Modules()) {
      torch::serialize::OutputArchive part;
      module->save(part);
      archive.write(name, part);
    }
    WriteOptimizerState(archive, *optimizer_);
    WriteGeneratorState(archive, "generator", generator_);
    std::ostringstream tensors;
    archive.save_to(tensors);
    CheckpointParts parts;
    parts.facts = {{"method", "mars-pretrain"}, {"graphs", names_},   {"num_ops", ops_},       {"step", step_},
                   {"best_loss", best_loss_},   {"stale", stale_},    {"seconds", Seconds()}};
    parts.tensors = tensors.str();
    WriteCheckpointFile(CheckpointPath(), SealCheckpoint(parts));
    last_save_ = Clock::now();
  }

  std::vector<std::pair<std::string, torch::nn::Module*>> Modules() {
    return {{"encoder", encoder_.get()}, {"discriminator", discriminator_.get()}, {"best", best_.get()}};
  }

  void LoadCheckpoint() {
    const std::string path = CheckpointPath();
    if (!fs::exists(path)) throw Error(ForMessage(path) + ": no pretraining checkpoint to resume from");
    CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path));
    const CheckpointFacts facts(path, parts.facts);
    if (facts.String("method") != "mars-pretrain") facts.Fail("not a Mars pretraining checkpoint");
    const nlohmann::json& graphs = facts.Array("graphs");
    const nlohmann::json& ops = facts.Array("num_ops");
    if (graphs != nlohmann::json(names_) || ops != nlohmann::json(ops_)) {
      facts.Fail("checkpoint is of other graphs (resume with the same --graphs in the same order)");
    }
    step_ = facts.Integer("step", 0, INT64_MAX);
    stale_ = facts.Integer("stale", 0, INT64_MAX);
    best_loss_ = facts.Number("best_loss", 0);
    seconds_before_ = facts.Number("seconds", 0);
    std::vector<ParameterShapes> shapes;
    for (auto [name, module] : Modules()) shapes.push_back(ShapesOf(*module));
    try {
      torch::serialize::InputArchive archive;
      std::istringstream in(parts.tensors);
      archive.load_from(in);
      for (auto [name, module] : Modules()) {
        torch::serialize::InputArchive part;
        archive.read(name, part);
        module->load(part);
      }
      ReadOptimizerState(archive, *optimizer_);
      ReadGeneratorState(archive, "generator", generator_);
    } catch (const c10::Error&) {
      facts.Fail("checkpoint's tensors do not load, or are of other sizes (--mars-hidden, --mars-layers)");
    }
    size_t i = 0;
    for (auto [name, module] : Modules()) {
      if (const std::string problem = LoadedParametersProblem(*module, shapes[i++]); !problem.empty()) {
        facts.Fail("checkpoint's " + name + " " + problem);
      }
    }
  }

  const MarsPretrainOptions& options_;
  std::vector<UnitInputs> inputs_;
  std::vector<std::string> names_;
  std::vector<int64_t> ops_;
  MarsEncoder encoder_{nullptr}, best_{nullptr};
  DgiDiscriminator discriminator_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  torch::Generator generator_;
  int64_t step_ = 0, stale_ = 0;
  double best_loss_ = -1;  // -1: no step yet
  double seconds_before_ = 0;
  Clock::time_point start_, last_save_;
};

}  // namespace

MarsPretrainResult PretrainMarsEncoder(const std::vector<const Graph*>& graphs, const MarsPretrainOptions& options,
                                       const std::function<void(const MarsPretrainProgress&)>& on_step) {
  MarsPretrainer pretrainer(graphs, options);
  return pretrainer.Run(on_step);
}

}  // namespace devplace
