// REINFORCE training of the seq2seq policy on simulated step times (2017
// §3.1, §3.4): controllers sample K placements each, workers measure them,
// and each controller updates the shared parameters with its own baseline.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <malloc.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "graph/group_order.h"
#include "rl/group_features.h"
#include "rl/rl_placer.h"
#include "rl/seq2seq_policy.h"
#include "sim/lower_bound.h"
#include "sim/measure.h"
#include "util/error.h"
#include "util/files.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A seed for one measurement, unique to (run seed, step, controller, sample).
uint64_t MixSeed(uint64_t seed, int64_t step, int32_t controller, int32_t sample) {
  uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(step + 1));
  x ^= 0xBF58476D1CE4E5B9ull * static_cast<uint64_t>(controller + 1);
  x ^= 0x94D049BB133111EBull * static_cast<uint64_t>(sample + 1);
  return x;
}

// Measures placements on a pool of simulators, one per worker thread.
class Evaluator {
 public:
  Evaluator(const PlacementProblem& problem, const Grouping& grouping, const RlOptions& options, int32_t workers)
      : problem_(problem), grouping_(grouping), options_(options) {
    for (int32_t w = 0; w < workers; ++w) {
      simulators_.push_back(std::make_unique<Simulator>(problem.graph, problem.cluster, problem.cost));
    }
  }

  struct Outcome {
    bool ok = false;
    double step_time_s = 0;
  };

  // An op-level placement, which the groups may not be able to express (a
  // warm start's baseline), measured like a sample of step 0.
  Outcome MeasurePlacement(const Placement& placement) {
    return MeasurePlacement(*simulators_[0], placement, MixSeed(options_.seed, 0, 0, 0));
  }

  std::vector<Outcome> Measure(const std::vector<std::vector<int32_t>>& group_devices, int64_t step, int32_t controller) {
    std::vector<Outcome> outcomes(group_devices.size());
    const size_t workers = std::min(simulators_.size(), group_devices.size());
    auto work = [&](size_t w) {
      for (size_t k = w; k < group_devices.size(); k += workers) {
        outcomes[k] = MeasureOne(*simulators_[w], group_devices[k], MixSeed(options_.seed, step, controller, static_cast<int32_t>(k)));
      }
    };
    if (workers <= 1) {
      work(0);
    } else {
      std::vector<std::thread> threads;
      for (size_t w = 0; w < workers; ++w) threads.emplace_back(work, w);
      for (auto& t : threads) t.join();
    }
    return outcomes;
  }

 private:
  bool noisy() const { return options_.jitter > 0 || options_.failure_probability > 0; }

  Outcome MeasurePlacement(Simulator& simulator, const Placement& placement, uint64_t seed) {
    MeasureOptions measure;
    measure.steps = options_.measure_steps;
    measure.noise.jitter = options_.jitter;
    measure.noise.failure_probability = options_.failure_probability;
    measure.seed = seed;
    Measurement m = MeasureStepTime(simulator, placement, measure);
    return {m.ok, m.mean_step_time_us * 1e-6};
  }

  Outcome MeasureOne(Simulator& simulator, const std::vector<int32_t>& devices, uint64_t seed) {
    // The deterministic simulator gives a placement the same time every
    // time: remember it, as converging policies resample the same ones.
    std::string key;
    if (!noisy()) {
      key.assign(reinterpret_cast<const char*>(devices.data()), devices.size() * sizeof(int32_t));
      std::lock_guard<std::mutex> lock(cache_mutex_);
      auto it = cache_.find(key);
      if (it != cache_.end()) return it->second;
    }
    Outcome outcome = MeasurePlacement(simulator, ExpandGroupPlacement(grouping_, devices), seed);
    if (!noisy()) {
      std::lock_guard<std::mutex> lock(cache_mutex_);
      if (cache_.size() < kMaxCached) cache_.emplace(std::move(key), outcome);
    }
    return outcome;
  }

  static constexpr size_t kMaxCached = 200000;
  const PlacementProblem& problem_;
  const Grouping& grouping_;
  const RlOptions& options_;
  std::vector<std::unique_ptr<Simulator>> simulators_;
  std::mutex cache_mutex_;
  std::unordered_map<std::string, Outcome> cache_;
};

// The groups, numbered in the order the policy reads them.
Grouping PolicyGrouping(const Graph& graph, const std::string& order) {
  Grouping grouping = BuildGrouping(graph);
  if (order == "topological") return grouping;
  if (order != "chain") throw Error("unknown group order '" + order + "' (chain or topological)");
  return RenumberGroups(grouping, ChainFollowingOrder(grouping));
}

struct Controller {
  int32_t id = 0;
  Seq2SeqPolicy policy{nullptr};  // the shared policy, or its own copy when there are several
  torch::Generator generator;
  double baseline = 0;
  std::unique_ptr<Evaluator> evaluator;
};

void CopyParameters(const Seq2SeqPolicy& from, Seq2SeqPolicy& to) {
  torch::NoGradGuard no_grad;
  auto source = from->parameters();
  auto target = to->parameters();
  for (size_t i = 0; i < source.size(); ++i) target[i].copy_(source[i]);
}

class Trainer {
 public:
  Trainer(const PlacementProblem& problem, const RlOptions& options)
      : problem_(problem),
        options_(options),
        grouping_(PolicyGrouping(problem.graph, options.group_order)),
        features_(BuildGroupFeatures(problem.graph, grouping_, problem.cluster)) {
    if (grouping_.num_groups() == 0) throw Error("graph " + problem.graph.name + " has no ops to place");
    torch::manual_seed(static_cast<uint64_t>(options.seed));
    Seq2SeqOptions policy_options;
    policy_options.tanh_constant = options.tanh_constant;
    policy_options.temperature = options.temperature;
    policy_options.stay_bias = options.stay_bias;
    policy_options.encoder_hidden = options.encoder_hidden;
    policy_options.decoder_hidden = options.decoder_hidden;
    shared_ = Seq2SeqPolicy(features_, problem.cluster.num_devices(), policy_options);
    optimizer_ = std::make_unique<torch::optim::Adam>(shared_->parameters(), torch::optim::AdamOptions(options.learning_rate));
    failing_reward_ = std::sqrt(options.failing_runtime_s > 0 ? options.failing_runtime_s : AutomaticFailingRuntimeS());

    const int32_t num_controllers = std::max(1, options.controllers);
    int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    int32_t workers = options.worker_threads > 0 ? options.worker_threads : std::max(1, cores / num_controllers);
    for (int32_t c = 0; c < num_controllers; ++c) {
      auto controller = std::make_unique<Controller>();
      controller->id = c;
      controller->generator = at::make_generator<at::CPUGeneratorImpl>(options.seed * 1000003ull + c);
      controller->baseline = failing_reward_;  // §3.1: the baseline starts at the failing signal
      if (num_controllers == 1) {
        controller->policy = shared_;
      } else {
        controller->policy = Seq2SeqPolicy(features_, problem.cluster.num_devices(), policy_options);
        CopyParameters(shared_, controller->policy);
      }
      controller->evaluator = std::make_unique<Evaluator>(problem, grouping_, options, workers);
      controllers_.push_back(std::move(controller));
    }
    if (!options.out_dir.empty()) fs::create_directories(options.out_dir);
  }

  RlResult Run(const RlProgressCallback& on_step) {
    start_ = Clock::now();
    if (options_.resume) {
      LoadCheckpoint();
    } else {
      if (!options_.out_dir.empty()) WriteFileAtomically(CurvePath(), CurveHeader());
      if (!options_.warm_start.empty()) WarmStart();
    }
    on_step_ = on_step;
    if (controllers_.size() == 1) {
      while (!Done()) Step(*controllers_[0]);
    } else {
      std::vector<std::thread> threads;
      for (auto& controller : controllers_) {
        threads.emplace_back([this, &controller] {
          while (!Done()) Step(*controller);
        });
      }
      for (auto& t : threads) t.join();
    }
    if (options_.checkpoint_every > 0 && !options_.out_dir.empty()) SaveCheckpoint();

    RlResult result;
    result.steps = step_;
    result.samples = samples_;
    result.seconds = Seconds();
    if (!best_placement_.empty()) {
      result.best_placement = best_placement_;
      result.best_step_time_s = best_time_s_;
      if (!options_.out_dir.empty()) result.placement_file = PlacementPath();
    }
    return result;
  }

 private:
  std::string PlacementPath() const { return (fs::path(options_.out_dir) / "best_placement.json").string(); }
  std::string CurvePath() const { return (fs::path(options_.out_dir) / "curve.csv").string(); }
  std::string CheckpointPath() const { return (fs::path(options_.out_dir) / "checkpoint.pt").string(); }
  static std::string CurveHeader() {
    return "step,seconds,samples,mean_step_time_s,best_step_time_s,failed_fraction,baseline,learning_rate\n";
  }
  double Seconds() const { return seconds_before_ + std::chrono::duration<double>(Clock::now() - start_).count(); }

  bool Done() const {
    if (options_.max_steps > 0 && step_ >= options_.max_steps) return true;
    if (options_.max_samples > 0 && samples_ >= options_.max_samples) return true;
    if (options_.max_seconds > 0 && Seconds() >= options_.max_seconds) return true;
    return options_.max_steps <= 0 && options_.max_samples <= 0 && options_.max_seconds <= 0;
  }

  double LearningRate(int64_t step) const {
    if (step <= options_.lr_decay_start || options_.lr_decay_every <= 0) return options_.learning_rate;
    return options_.learning_rate * std::pow(options_.lr_decay, static_cast<double>((step - options_.lr_decay_start) / options_.lr_decay_every));
  }

  void SetLearningRate(double lr) {
    for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }

  // One update by one controller: sample K, measure, REINFORCE.
  void Step(Controller& controller) {
    int64_t step;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      step = step_;
    }
    // One encoding serves both sampling (detached) and scoring.
    Seq2SeqPolicyImpl::Encoded encoded = controller.policy->Encode();
    Seq2SeqPolicyImpl::Samples samples;
    {
      torch::NoGradGuard no_grad;
      double noise = step < options_.logit_noise_steps ? options_.logit_noise_std : 0.0;
      samples = controller.policy->Sample(encoded.detach(), options_.samples_per_step, controller.generator, noise);
    }
    std::vector<Evaluator::Outcome> outcomes = controller.evaluator->Measure(samples.devices, step, controller.id);

    // Which placements update the policy: all before the cut-over, after it
    // only those that ran (§3.1).
    const bool after_cutover = step >= options_.cutover_step;
    std::vector<std::vector<int32_t>> used_devices;
    std::vector<double> used_rewards;
    double sum_time = 0;
    int32_t ran = 0;
    for (size_t k = 0; k < outcomes.size(); ++k) {
      if (outcomes[k].ok) {
        sum_time += outcomes[k].step_time_s;
        ++ran;
      }
      if (after_cutover && !outcomes[k].ok) continue;
      used_devices.push_back(samples.devices[k]);
      used_rewards.push_back(outcomes[k].ok ? std::sqrt(outcomes[k].step_time_s) : failing_reward_);
    }

    if (!used_devices.empty()) {
      Seq2SeqPolicyImpl::Samples scored = controller.policy->Score(encoded, used_devices);
      std::vector<float> advantages;
      for (double r : used_rewards) advantages.push_back(static_cast<float>(r - controller.baseline));
      torch::Tensor advantage = torch::tensor(advantages);
      // Minimising E[R]: descend (R - b) * log p.
      torch::Tensor loss = (advantage * scored.log_prob).mean();
      if (options_.entropy_weight > 0) loss = loss - options_.entropy_weight * scored.entropy.mean();
      controller.policy->zero_grad();
      loss.backward();
      for (double r : used_rewards) {
        controller.baseline = options_.baseline_decay * controller.baseline + (1 - options_.baseline_decay) * r;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      ApplyGradients(controller, step);
    }

    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t k = 0; k < outcomes.size(); ++k) {
      if (outcomes[k].ok && IsBest(outcomes[k].step_time_s)) {
        RecordBest(ExpandGroupPlacement(grouping_, samples.devices[k]), outcomes[k].step_time_s);
      }
    }
    ++step_;
    samples_ += static_cast<int64_t>(outcomes.size());

    RlProgress progress;
    progress.step = step_;
    progress.samples = samples_;
    progress.seconds = Seconds();
    progress.best_step_time_s = best_placement_.empty() ? 0 : best_time_s_;
    progress.mean_step_time_s = ran > 0 ? sum_time / ran : 0;
    progress.failed_fraction = 1.0 - static_cast<double>(ran) / outcomes.size();
    progress.samples_per_second = progress.seconds > 0 ? samples_ / progress.seconds : 0;
    progress.samples_used = static_cast<int32_t>(used_devices.size());
    if (!options_.out_dir.empty()) {
      std::ofstream curve(CurvePath(), std::ios::app);
      curve << progress.step << "," << progress.seconds << "," << progress.samples << "," << progress.mean_step_time_s
            << "," << progress.best_step_time_s << "," << progress.failed_fraction << "," << controller.baseline << ","
            << LearningRate(step) << "\n";
    }
    if (on_step_) on_step_(progress);
    if (options_.checkpoint_every > 0 && !options_.out_dir.empty() && step_ % options_.checkpoint_every == 0) {
      SaveCheckpoint();
    }
  }

  // With the lock held: clip, step the shared optimiser, and refresh the
  // controller's copy.
  void ApplyGradients(Controller& controller, int64_t step) {
    if (controller.policy.get() != shared_.get()) {
      auto local = controller.policy->parameters();
      auto shared = shared_->parameters();
      for (size_t i = 0; i < shared.size(); ++i) {
        shared[i].mutable_grad() = local[i].grad().defined() ? local[i].grad().clone() : torch::Tensor();
      }
    }
    torch::nn::utils::clip_grad_norm_(shared_->parameters(), options_.grad_clip_norm);
    SetLearningRate(LearningRate(step));
    optimizer_->step();
    if (controller.policy.get() != shared_.get()) CopyParameters(shared_, controller.policy);
  }

  // The placement a warm start imitates: a placement file, a baseline
  // method, or "best", the fastest baseline that runs.
  Placement WarmStartTarget() {
    if (fs::exists(options_.warm_start)) return LoadPlacementFile(options_.warm_start, problem_.graph, problem_.cluster);
    if (options_.warm_start != "best") return FindPlacer(options_.warm_start).place(problem_).placement;
    Placement best;
    Evaluator::Outcome best_outcome;
    for (const PlacerInfo& placer : ListPlacers()) {
      if (placer.name == "random") continue;  // not a method anyone would start from
      Placement candidate = placer.place(problem_).placement;
      Evaluator::Outcome outcome = controllers_[0]->evaluator->MeasurePlacement(candidate);
      if (best.empty() || (outcome.ok && (!best_outcome.ok || outcome.step_time_s < best_outcome.step_time_s))) {
        best = std::move(candidate);
        best_outcome = outcome;
      }
    }
    return best;
  }

  // Imitates a baseline placement before RL starts (an option, not the
  // default): supervised steps toward it, until the policy gives each group
  // its target device with probability about 0.99 or the steps run out.
  // The target is measured like any sample, as it is (the groups may not
  // express it exactly), so the search's best starts there, and so do the
  // controllers' baselines: started at the failing signal they would reward
  // every early sample and undo the imitation.
  void WarmStart() {
    const Placement target_placement = WarmStartTarget();
    const std::vector<int32_t> target =
        GroupDevicesFromPlacement(grouping_, target_placement, problem_.cluster.num_devices());
    const double num_groups = static_cast<double>(target.size());
    for (int64_t i = 0; i < options_.warm_start_steps; ++i) {
      torch::Tensor loss = -shared_->Score({target}).log_prob.mean();
      if (loss.item<double>() / num_groups < 0.01) break;
      shared_->zero_grad();
      loss.backward();
      torch::nn::utils::clip_grad_norm_(shared_->parameters(), options_.grad_clip_norm);
      SetLearningRate(0.01);  // supervised: a larger step is safe; 300 steps imitate a pipeline over 170 groups
      optimizer_->step();
    }
    Evaluator::Outcome measured = controllers_[0]->evaluator->MeasurePlacement(target_placement);
    for (auto& controller : controllers_) {
      if (controller->policy.get() != shared_.get()) CopyParameters(shared_, controller->policy);
      if (measured.ok) controller->baseline = std::sqrt(measured.step_time_s);
    }
    if (measured.ok) RecordBest(target_placement, measured.step_time_s);
  }

  bool IsBest(double step_time_s) const { return best_placement_.empty() || step_time_s < best_time_s_; }

  // With the lock held (or before the controllers start): keeps `placement`
  // if it is the fastest so far, and writes it out.
  void RecordBest(Placement placement, double step_time_s) {
    if (!IsBest(step_time_s)) return;
    best_time_s_ = step_time_s;
    best_placement_ = std::move(placement);
    if (!options_.out_dir.empty()) SavePlacementFile(PlacementPath(), problem_.graph, problem_.cluster, best_placement_);
  }

  // The whole training state in one archive, written to a temporary file
  // and renamed, so a crash leaves the previous checkpoint intact.
  void SaveCheckpoint() {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive policy_archive;
    shared_->save(policy_archive);
    archive.write("policy", policy_archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer_->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    archive.write("step", torch::tensor(static_cast<int64_t>(step_)));
    archive.write("samples", torch::tensor(static_cast<int64_t>(samples_)));
    archive.write("seconds", torch::tensor(Seconds(), torch::kFloat64));
    archive.write("num_groups", torch::tensor(static_cast<int64_t>(grouping_.num_groups())));
    archive.write("num_devices", torch::tensor(static_cast<int64_t>(problem_.cluster.num_devices())));
    archive.write("num_controllers", torch::tensor(static_cast<int64_t>(controllers_.size())));
    for (auto& c : controllers_) {
      archive.write("baseline_" + std::to_string(c->id), torch::tensor(c->baseline, torch::kFloat64));
      archive.write("generator_" + std::to_string(c->id), c->generator.get_state());
    }
    std::vector<int64_t> best(best_placement_.begin(), best_placement_.end());
    archive.write("best_placement", torch::tensor(best, torch::kInt64));
    archive.write("best_time_s", torch::tensor(best_time_s_, torch::kFloat64));
    std::string temporary = CheckpointPath() + ".tmp";
    archive.save_to(temporary);
    fs::rename(temporary, CheckpointPath());
  }

  void LoadCheckpoint() {
    const std::string path = CheckpointPath();
    if (!fs::exists(path)) throw Error(path + ": no checkpoint to resume from");
    torch::serialize::InputArchive archive;
    try {
      archive.load_from(path);
    } catch (const c10::Error&) {
      throw Error(path + ": not a devplace checkpoint, or damaged");
    }
    auto read = [&](const std::string& key) {
      torch::Tensor t;
      if (!archive.try_read(key, t)) throw Error(path + ": checkpoint lacks '" + key + "'");
      return t;
    };
    if (read("num_groups").item<int64_t>() != grouping_.num_groups() ||
        read("num_devices").item<int64_t>() != problem_.cluster.num_devices()) {
      throw Error(path + ": checkpoint is for another graph or cluster (" + std::to_string(read("num_groups").item<int64_t>()) +
                  " groups on " + std::to_string(read("num_devices").item<int64_t>()) + " devices)");
    }
    if (read("num_controllers").item<int64_t>() != static_cast<int64_t>(controllers_.size())) {
      throw Error(path + ": checkpoint has " + std::to_string(read("num_controllers").item<int64_t>()) +
                  " controllers; resume with the same --controllers");
    }
    // A policy of other sizes, or one saved before a parameter was added
    // (the stay bias), does not load: say so in one line, not torch's trace.
    // Loading replaces tensors whatever their shape, so shapes are compared.
    const std::string mismatch = path + ": checkpoint's policy does not match this one (other network sizes, or an older devplace)";
    std::vector<std::vector<int64_t>> shapes;
    for (const torch::Tensor& p : shared_->parameters()) shapes.push_back(p.sizes().vec());
    try {
      torch::serialize::InputArchive policy_archive;
      archive.read("policy", policy_archive);
      shared_->load(policy_archive);
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer_->load(optimizer_archive);
    } catch (const c10::Error&) {
      throw Error(mismatch);
    }
    auto loaded = shared_->parameters();
    for (size_t i = 0; i < loaded.size(); ++i) {
      if (loaded[i].sizes().vec() != shapes[i]) throw Error(mismatch);
    }
    step_ = read("step").item<int64_t>();
    samples_ = read("samples").item<int64_t>();
    seconds_before_ = read("seconds").item<double>();
    for (auto& c : controllers_) {
      c->baseline = read("baseline_" + std::to_string(c->id)).item<double>();
      c->generator.set_state(read("generator_" + std::to_string(c->id)));
      if (c->policy.get() != shared_.get()) CopyParameters(shared_, c->policy);
    }
    torch::Tensor best = read("best_placement");
    best_placement_.assign(best.data_ptr<int64_t>(), best.data_ptr<int64_t>() + best.numel());
    best_time_s_ = read("best_time_s").item<double>();

    // The curve keeps the rows up to the checkpoint; later ones are redone.
    std::ifstream in(CurvePath());
    std::string kept = CurveHeader(), line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      char* end = nullptr;
      long long row_step = std::strtoll(line.c_str(), &end, 10);
      if (end != line.c_str() && row_step <= step_) kept += line + "\n";
    }
    WriteFileAtomically(CurvePath(), kept);
  }

  double AutomaticFailingRuntimeS() const {
    std::vector<int32_t> cpus = DevicesOfKind(problem_.cluster, DeviceKind::kCpu);
    if (!cpus.empty()) {
      SimResult cpu = problem_.simulator.Run(SingleDevicePlacement(problem_.graph, problem_.cluster, cpus.front()));
      if (cpu.ok()) return 2 * cpu.step_time_s();
    }
    return 10e-6 * StepTimeLowerBound(problem_.graph, problem_.cluster, problem_.cost).step_time_us();
  }

  const PlacementProblem& problem_;
  const RlOptions& options_;
  Grouping grouping_;
  GroupFeatures features_;
  Seq2SeqPolicy shared_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  double failing_reward_ = 0;
  RlProgressCallback on_step_;

  std::mutex mutex_;  // guards everything below and the shared parameters
  int64_t step_ = 0;
  int64_t samples_ = 0;
  double seconds_before_ = 0;  // from before a resume
  Clock::time_point start_;
  Placement best_placement_;  // op by op: a warm start's target may be finer than the groups
  double best_time_s_ = 0;
};

}  // namespace

RlResult TrainRlPlacer(const PlacementProblem& problem, const RlOptions& options, const RlProgressCallback& on_step) {
  // Parallelism comes from workers and controllers; torch's own intra-op
  // threads would only fight them for the cores.
  torch::set_num_threads(1);
  // Autograd allocates and frees megabyte-sized gradient buffers at every
  // decoder step; served by mmap, each costs page faults. Keeping them on
  // the heap makes training about twice as fast.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  Trainer trainer(problem, options);
  return trainer.Run(on_step);
}

}  // namespace devplace
