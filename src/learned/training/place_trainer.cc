// The training loop's mode that places one graph (learned/training/training_loop.h),
// for every learned placer (2017 §3.1, §3.4): controllers sample K
// placements each from their policy, an environment measures them, an
// algorithm updates the shared parameters; around that, the progress line,
// the best placement kept op by op, the curve, atomic checkpoints with
// exact resume, warm starts and zero-shot placing.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>

#include "learned/training/algorithm.h"
#include "learned/training/controller_rounds.h"
#include "learned/training/gradient_sum.h"
#include "learned/training/training_ranks.h"
#include "learned/files/checkpoint_facts.h"
#include "learned/files/checkpoint_file.h"
#include "learned/files/loaded_parameters.h"
#include "learned/methods.h"
#include "learned/training/optimizer.h"
#include "learned/training/parameters_for_tests.h"
#include "learned/training/sampled_batch.h"
#include "learned/training/start_probes.h"
#include "learned/training/step_profile.h"
#include "learned/training/training_budget.h"
#include "learned/training/training_loop.h"
#include "learned/training/warm_start.h"
#include "learned/policies/policy.h"
#include "learned/learned_placer.h"
#include "learned/files/run_files.h"
#include "learned/files/run_folder.h"
#include "learned/training/one_line_errors.h"
#include "sim/environment.h"
#include "sim/lower_bound.h"
#include "util/error.h"
#include "util/files.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;

struct Controller {
  int32_t id = 0;
  Policy* policy = nullptr;            // the shared policy, or own_policy when there are several
  std::unique_ptr<Policy> own_policy;
  torch::Generator generator;
  double baseline = 0;
  std::unique_ptr<Environment> environment;
};

void CopyParameters(Policy& from, Policy& to) { devplace::CopyParameters(from.module(), to.module()); }

// A generator's state as bytes (a report's), and back as torch's state tensor.
std::string StateBytes(const torch::Tensor& state) {
  const torch::Tensor bytes = state.contiguous();
  return std::string(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<size_t>(bytes.numel()));
}
std::string GeneratorBytes(torch::Generator& generator) { return StateBytes(generator.get_state()); }
torch::Tensor GeneratorTensor(const std::string& bytes) {
  torch::Tensor state = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(state.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return state;
}

class PlaceTrainer : public TrainingMode {
 public:
  PlaceTrainer(const PlacementProblem& problem, const LearnedOptions& options)
      : problem_(problem),
        options_(options),
        budget_(options),
        algorithm_(MakeAlgorithm(options)),
        ranks_(options.controller_ranks.get()) {
    // The policy's parameters start random: from the run's seed.
    torch::manual_seed(static_cast<uint64_t>(options.seed));
    shared_ = MakePolicy(problem, options);
    optimizer_ = MakePolicyOptimizer(*shared_, options);
    grade_failures_ = GradesFailures(options);
    failing_reward_ = FailingRewardOf(problem, options);

    // Across processes each controller is a process of its own.
    const int32_t num_controllers = ranks_ ? 1 : std::max(1, options.controllers);
    int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    int32_t workers = options.worker_threads > 0 ? options.worker_threads : std::max(1, cores / num_controllers);
    for (int32_t c = 0; c < num_controllers; ++c) {
      auto controller = std::make_unique<Controller>();
      controller->id = ranks_ ? ranks_->rank() : c;  // its seed stream and its batches' noise stream
      controller->generator = ControllerGenerator(controller->id);
      controller->baseline = failing_reward_;  // §3.1: the baseline starts at the failing signal
      if (num_controllers == 1) {
        controller->policy = shared_.get();
      } else {
        controller->own_policy = shared_->MakeSibling();
        controller->policy = controller->own_policy.get();
        CopyParameters(*shared_, *controller->policy);
      }
      controller->environment = MakeTrainingEnvironment(problem, options, workers, grade_failures_);
      controllers_.push_back(std::move(controller));
    }
    // (Another controller across processes takes rank 0's in the start.)
    if (options.make_environment && !controllers_[0]->environment->simulated() && options.failing_runtime_s <= 0 && IsHead()) {
      // The simulator's all-on-CPU time may be far from what this
      // environment measures (uncalibrated, 3-6x optimistic on a real
      // machine): a failing signal below the times that run would reward
      // failing. So the environment measures it.
      std::vector<int32_t> cpus = DevicesOfKind(problem.cluster, DeviceKind::kCpu);
      if (!cpus.empty()) {
        const Outcome cpu = controllers_[0]->environment->MeasureOne(
            SingleDevicePlacement(problem.graph, problem.cluster, cpus.front()));
        if (cpu.ok) failing_reward_ = std::sqrt(2 * cpu.step_time_s);
      }
      for (auto& controller : controllers_) controller->baseline = failing_reward_;
    }
  }

  ~PlaceTrainer() override {
    if (curve_fd_ >= 0) ::close(curve_fd_);
    if (output_open_) RemoveTemporaries(options_.out_dir, /*only_this_process=*/true);
  }

  LearnedResult Run(const LearnedProgressCallback& on_step) {
    budget_.Start();
    on_step_ = on_step;
    RunTrainingLoop(*this);
    DumpParametersForTests("end");
    PrintStepProfile();
    LearnedResult result;
    result.steps = step_;
    result.samples = samples_;
    result.seconds = Seconds();
    if (ranks_) result.controller_samples = controller_samples_;
    if (!best_placement_.empty()) {
      result.best_placement = best_placement_;
      result.best_step_time_s = best_time_s_;
      if (!options_.out_dir.empty()) result.placement_file = PlacementPath();
    } else {
      result.closest_placement = closest_placement_;
    }
    return result;
  }

  void Start() override {
    // Everything that can fail on the inputs happens before the first write
    // to the out folder, so a refused run leaves nothing behind.
    CheckOutFolder();
    if (!IsHead()) {
      // Another controller across processes: it starts where rank 0's
      // start left the policy, and writes nothing.
      ReceiveStart();
      return;
    }
    if (options_.resume) {
      LoadCheckpoint();
    } else {
      // A stop during the start (probes, a warm start's imitation) keeps the
      // best placement measured so far; no checkpoint, whose policy would
      // stand for a start that never finished.
      try {
        ProbeStart();
        if (!options_.warm_start.empty()) WarmStart();
      } catch (const Stopped&) {
        stopped_in_start_ = true;
      }
    }
    OpenOutput();
    budget_.CheckpointWritten();
    if (options_.zero_shot && !stopped_in_start_) {
      try {
        ZeroShot();
      } catch (const Stopped&) {
      }
    }
    if (ranks_) SendStart();
  }

  int32_t num_controllers() const override { return static_cast<int32_t>(controllers_.size()); }
  bool Done() const override { return ranks_ ? world_done_ : BudgetDone(); }

  // Across processes rank 0 decides, with every controller's samples and
  // its clock; alone, each controller's thread asks before its update.
  bool BudgetDone() const {
    if (budget_.Done(step_, samples_)) return true;
    // Nothing sampled fits yet: hand the rest to the finishing search
    // (LearnedOptions::unfitted_share).
    const double share = options_.unfitted_share;
    if (share <= 0 || !best_placement_.empty()) return false;
    return (options_.max_samples > 0 && static_cast<double>(samples_) >= share * static_cast<double>(options_.max_samples)) ||
           (options_.max_seconds > 0 && Seconds() >= share * options_.max_seconds);
  }
  void Step(int32_t controller) override {
    Step(*controllers_[controller]);
    if (ranks_) EndRound();
  }

  void Finish() override {
    if (CheckpointsOn() && !stopped_in_start_) SaveCheckpoint();
  }

 private:
  std::string PlacementPath() const { return (fs::path(options_.out_dir) / run_folder::kBestPlacement).string(); }
  std::string CurvePath() const { return (fs::path(options_.out_dir) / run_folder::kCurve).string(); }
  std::string CheckpointPath() const { return (fs::path(options_.out_dir) / run_folder::kCheckpoint).string(); }
  static std::string CurveHeader() {
    return "step,seconds,samples,mean_step_time_s,best_step_time_s,failed_fraction,baseline,learning_rate\n";
  }
  double Seconds() const { return budget_.Seconds(); }
  bool CheckpointsOn() const {
    return !options_.out_dir.empty() && (options_.checkpoint_every > 0 || options_.checkpoint_seconds > 0);
  }


  void CheckOutFolder() const {
    if (options_.out_dir.empty()) {
      if (options_.resume) throw Error("--resume needs the folder of the run to continue (--out)");
      return;
    }
    std::error_code error;
    const fs::file_status status = fs::status(options_.out_dir, error);
    if (fs::exists(status) && !fs::is_directory(status)) {
      throw Error(ForMessage(options_.out_dir) + ": exists and is not a folder (--out names the folder for the run's files)");
    }
    if (options_.resume && !fs::exists(status)) {
      throw Error(ForMessage(CheckpointPath()) + ": no checkpoint to resume from");
    }
  }

  // The first write to the out folder: stale temporary files go, the curve
  // starts (or, on resume, goes back to the checkpoint's rows, replaced in
  // one rename so that no row is ever torn, lost or repeated), and the best
  // placement so far is written if the file does not already hold it.
  void OpenOutput() {
    if (options_.out_dir.empty()) return;
    fs::create_directories(options_.out_dir);
    output_open_ = true;
    RemoveTemporaries(options_.out_dir, /*only_this_process=*/false);
    WriteFileAtomically(CurvePath(), CurveHeader() + curve_rows_);
    curve_fd_ = ::open(CurvePath().c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (curve_fd_ < 0) FailedWrite(CurvePath(), errno);
    if (best_file_stale_) WriteBestPlacement();
  }

  // A trained policy placing without an update: its most likely placement
  // and K - 1 samples, measured once; the fastest is the result.
  void ZeroShot() {
    Controller& controller = *controllers_[0];
    std::unique_ptr<PolicyPass> pass = controller.policy->Begin();
    SampleOptions greedy;
    greedy.greedy = true;
    std::vector<Decision> decisions = pass->Sample(1, controller.generator, greedy).decisions;
    if (options_.samples_per_step > 1) {
      for (Decision& d : pass->Sample(options_.samples_per_step - 1, controller.generator, SampleOptions()).decisions) {
        decisions.push_back(std::move(d));
      }
    }
    std::vector<Placement> placements;
    for (const Decision& decision : decisions) placements.push_back(controller.policy->ToPlacement(decision));
    const std::vector<Outcome> outcomes = controller.environment->Measure(placements, 0, controller.id);
    double sum_time = 0;
    int32_t ran = 0;
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t k = 0; k < outcomes.size(); ++k) {
      if (outcomes[k].oom()) RecordClosest(placements[k], outcomes[k].memory_overflow);
      if (!outcomes[k].ok) continue;
      sum_time += outcomes[k].step_time_s;
      ++ran;
      if (IsBest(outcomes[k].step_time_s)) RecordBest(std::move(placements[k]), outcomes[k].step_time_s);
    }
    samples_ += static_cast<int64_t>(outcomes.size());
    const LearnedProgress progress = Progress(sum_time, ran, outcomes.size());
    AppendCurveRow(progress, controller.baseline, 0);
    if (on_step_) on_step_(progress);
  }

  // One update by one controller, or none: a stop in the middle of one
  // (sampling 5,000 groups, measuring, scoring, backpropagating: each polls
  // and throws Stopped) drops it whole, and puts back what it had moved (the
  // controller's random stream, its baseline), so that the checkpoint
  // written next is the one of the last whole step.
  void Step(Controller& controller) {
    const torch::Tensor generator_before = controller.generator.get_state();
    const double baseline_before = controller.baseline;
    sums_taken_ = 0;
    update_ended_ = false;
    round_ = {};
    try {
      StepOrThrow(controller);
    } catch (const Stopped&) {
      // Across processes the others wait for this update's sums: the first
      // says the stop, and every controller drops the update alike.
      if (ranks_ && !update_ended_) {
        try {
          JoinSums(controller, /*stopped=*/true);
        } catch (const Stopped&) {
        }
      }
      controller.generator.set_state(generator_before);
      controller.baseline = baseline_before;
    }
  }

  // Sample K, measure, update (REINFORCE or PPO).
  void StepOrThrow(Controller& controller) {
    ScopedStepPhase timed_step(StepPhase::kStep);
    int64_t step;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      step = step_;
    }
    // One encoder pass serves both sampling and scoring.
    std::unique_ptr<PolicyPass> pass;
    {
      ScopedStepPhase timed(StepPhase::kEncode);
      pass = controller.policy->Begin();
    }
    SampledBatch sampled = SampleAndMeasure(*controller.policy, *pass, *controller.environment, controller.generator, step,
                                            controller.id, options_, failing_reward_, grade_failures_);
    std::vector<Placement>& placements = sampled.placements;
    const std::vector<Outcome>& outcomes = sampled.outcomes;
    const UpdateBatch& used = sampled.used;

    // A stop here keeps the batch's best (it was measured whole) but makes
    // no update.
    if (StopRequested()) {
      RecordBestOf(placements, outcomes);
      throw Stopped();
    }
    if (!used.decisions.empty()) {
      algorithm_->Update(*controller.policy, *pass, used, controller.baseline, [&] {
        if (ranks_) return ShareAndApply(controller, step, /*gives=*/true, /*stopped=*/false);
        std::lock_guard<std::mutex> lock(mutex_);
        ApplyGradients(controller, step);
      });
    }
    // The optimiser steps the others take, with this controller's part
    // done (or none: nothing of its batch counts).
    if (ranks_) JoinSums(controller, /*stopped=*/false);

    std::lock_guard<std::mutex> lock(mutex_);
    RecordBestOfLocked(placements, outcomes);
    ++step_;
    if (ranks_) {
      // Rank 0 counts, prints and writes it with the others' (EndRound).
      round_.stepped = true;
      round_.samples = static_cast<int64_t>(outcomes.size());
      round_.sum_time_s = sampled.sum_time_s;
      round_.ran = sampled.ran;
      round_.used = static_cast<int32_t>(used.decisions.size());
      return;
    }
    samples_ += static_cast<int64_t>(outcomes.size());

    LearnedProgress progress = Progress(sampled.sum_time_s, sampled.ran, outcomes.size());
    progress.samples_used = static_cast<int32_t>(used.decisions.size());
    AppendCurveRow(progress, controller.baseline, ScheduledLearningRates(options_, step).network);
    if (on_step_) on_step_(progress);
    if (CheckpointDue()) SaveCheckpoint();
    HoldPoint("step-end");
  }

  void RecordBestOf(std::vector<Placement>& placements, const std::vector<Outcome>& outcomes) {
    std::lock_guard<std::mutex> lock(mutex_);
    RecordBestOfLocked(placements, outcomes);
  }

  void RecordBestOfLocked(std::vector<Placement>& placements, const std::vector<Outcome>& outcomes) {
    for (size_t k = 0; k < outcomes.size(); ++k) {
      if (outcomes[k].ok && IsBest(outcomes[k].step_time_s)) RecordBest(std::move(placements[k]), outcomes[k].step_time_s);
      if (outcomes[k].oom()) RecordClosest(placements[k], outcomes[k].memory_overflow);
    }
  }

  // With the lock held (or before the controllers start): while nothing
  // fits, the placement that overflowed least (the first, where overflow
  // is not graded), where a finishing search can start
  // (methods/finishing_search.h).
  void RecordClosest(const Placement& placement, double overflow) {
    if (!best_placement_.empty() || placement.empty()) return;
    if (!closest_placement_.empty() && overflow >= closest_overflow_) return;
    closest_placement_ = placement;
    closest_overflow_ = overflow;
  }

  // With the lock held: where the search stands after a batch of
  // `measured` placements, `ran` of which ran in `sum_time_s` in all.
  LearnedProgress Progress(double sum_time_s, int32_t ran, size_t measured) const {
    LearnedProgress progress;
    progress.step = step_;
    progress.samples = samples_;
    progress.seconds = Seconds();
    progress.best_step_time_s = best_placement_.empty() ? 0 : best_time_s_;
    progress.mean_step_time_s = ran > 0 ? sum_time_s / ran : 0;
    progress.failed_fraction = 1.0 - static_cast<double>(ran) / static_cast<double>(measured);
    progress.samples_per_second = progress.seconds > 0 ? samples_ / progress.seconds : 0;
    return progress;
  }

  // With the lock held: one row per step, kept in memory for the checkpoint
  // and appended to the file in one write.
  void AppendCurveRow(const LearnedProgress& progress, double baseline, double learning_rate) {
    std::ostringstream row;
    row << progress.step << "," << progress.seconds << "," << progress.samples << "," << progress.mean_step_time_s << ","
        << progress.best_step_time_s << "," << progress.failed_fraction << "," << baseline << "," << learning_rate << "\n";
    curve_rows_ += row.str();
    if (curve_fd_ >= 0) WriteWithHold(curve_fd_, row.str(), CurvePath(), "curve-row");
  }

  // With the lock held, after a step: every `checkpoint_every` steps, when
  // `checkpoint_seconds` have passed since the last, and once the first
  // placement that runs is known, so that a run killed early can go on.
  bool CheckpointDue() const {
    if (!CheckpointsOn()) return false;
    if (first_best_unsaved_) return true;
    return budget_.CheckpointDue(step_);
  }

  // With the lock held: clip, step the shared optimiser, and refresh the
  // controller's copy.
  void ApplyGradients(Controller& controller, int64_t step) {
    ScopedStepPhase timed(StepPhase::kOptimizer);
    if (controller.policy != shared_.get()) {
      auto local = controller.policy->module().parameters();
      auto shared = shared_->module().parameters();
      for (size_t i = 0; i < shared.size(); ++i) {
        shared[i].mutable_grad() = local[i].grad().defined() ? local[i].grad().clone() : torch::Tensor();
      }
    }
    torch::nn::utils::clip_grad_norm_(shared_->module().parameters(), options_.grad_clip_norm);
    SetLearningRates(*optimizer_, ScheduledLearningRates(options_, step));
    optimizer_->step();
    if (controller.policy != shared_.get()) CopyParameters(*shared_, *controller.policy);
  }

  bool IsHead() const { return !ranks_ || ranks_->rank() == 0; }

  // Controller `id`'s seed stream, from the run's seed.
  torch::Generator ControllerGenerator(int32_t id) const {
    return at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(options_.seed) * 1000003ull + static_cast<uint64_t>(id));
  }

  // Controllers across processes: how many there are (each a process).
  size_t NumControllers() const { return ranks_ ? static_cast<size_t>(ranks_->size()) : controllers_.size(); }

  // The policy's parameters and Adam's state: what every controller starts
  // from, and what a checkpoint holds besides the generators.
  void WritePolicyAndOptimizer(torch::serialize::OutputArchive& archive) const {
    torch::serialize::OutputArchive policy_archive;
    shared_->module().save(policy_archive);
    archive.write("policy", policy_archive);
    WriteOptimizerState(archive, *optimizer_);
  }

  // DEVPLACE_TEST_PLACE_PARAMETERS: each controller's copy of the policy,
  // PREFIX.WHEN.controllerK (after the start and after the search).
  void DumpParametersForTests(const std::string& when) const {
    WriteParametersForTests("DEVPLACE_TEST_PLACE_PARAMETERS", "." + when + ".controller" + std::to_string(ranks_ ? ranks_->rank() : 0),
                            shared_->module());
  }

  // Controllers across processes, inside an update: this controller's
  // gradients (`gives`; none when its batch has nothing that counts, or it
  // was `stopped`) summed with the others' through rank 0's store, and the
  // optimiser step on their mean, the same on every controller. A stop on
  // any controller at the update's first sum drops the update everywhere
  // (Stopped); at a later one, it ends with the steps made.
  void ShareAndApply(Controller& controller, int64_t step, bool gives, bool stopped) {
    if (update_ended_) return;
    torch::nn::Module& module = controller.policy->module();
    if (!gives) module.zero_grad(/*set_to_none=*/true);
    const SharedGradients shared = ShareGradients(module, gives ? 1 : 0, stopped, *ranks_);
    ++sums_taken_;
    if (shared.dropped) {
      update_ended_ = true;
      if (sums_taken_ == 1) throw Stopped();
      return;
    }
    // No controller had a batch that counts: no step, as in one process.
    if (shared.parts == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    ApplyGradients(controller, step);
  }

  // The sums this update has left (the algorithm's optimiser steps per
  // update), joined without a part of this controller's.
  void JoinSums(Controller& controller, bool stopped) {
    int64_t step;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      step = step_;
    }
    while (!update_ended_ && sums_taken_ < algorithm_->optimizer_steps_per_update()) {
      ShareAndApply(controller, step, /*gives=*/false, stopped);
    }
  }

  // Rank 0's start to the other controllers: the policy and Adam's state
  // after its start probes (or warm start), its failing signal and baseline,
  // and whether the run is already done. Every controller then holds the
  // same bits, whatever its own host's probes would have measured.
  void SendStart() {
    const size_t num_controllers = static_cast<size_t>(ranks_->size());
    if (!options_.resume) {
      // The others' states as they start, for a checkpoint before their
      // first report: rank 0's baseline, each one's own seed stream.
      others_.assign(num_controllers, {});
      for (size_t k = 1; k < num_controllers; ++k) {
        torch::Generator generator = ControllerGenerator(static_cast<int32_t>(k));
        others_[k].baseline = controllers_[0]->baseline;
        others_[k].generator_state = GeneratorBytes(generator);
      }
      controller_samples_.assign(num_controllers, 0);
      controller_samples_[0] = samples_;  // the start probes
    }
    torch::serialize::OutputArchive archive;
    WritePolicyAndOptimizer(archive);
    ControllersStart start;
    start.failing_reward = failing_reward_;
    start.baselines = {controllers_[0]->baseline};
    for (size_t k = 1; k < num_controllers; ++k) {
      start.baselines.push_back(others_[k].baseline);
      if (options_.resume) archive.write("generator_" + std::to_string(k), GeneratorTensor(others_[k].generator_state));
    }
    start.step = step_;
    start.resumed = options_.resume;
    start.done = BudgetDone() || StopRequested() || stopped_in_start_;
    std::ostringstream tensors;
    archive.save_to(tensors);
    start.tensors = tensors.str();
    ranks_->FromRankZero(EncodeStart(start));
    world_done_ = start.done;
    DumpParametersForTests("start");
  }

  void ReceiveStart() {
    const ControllersStart start = DecodeStart(ranks_->FromRankZero(""));
    torch::serialize::InputArchive archive;
    std::istringstream in(start.tensors);
    archive.load_from(in);
    torch::serialize::InputArchive policy_archive;
    archive.read("policy", policy_archive);
    shared_->module().load(policy_archive);
    ReadOptimizerState(archive, *optimizer_);
    const size_t me = static_cast<size_t>(ranks_->rank());
    if (start.baselines.size() != static_cast<size_t>(ranks_->size())) {
      throw Error("distributed run: rank 0's start for the controllers names " + std::to_string(start.baselines.size()) +
                  " controllers, not " + std::to_string(ranks_->size()));
    }
    failing_reward_ = start.failing_reward;
    controllers_[0]->baseline = start.baselines[me];
    step_ = start.step;
    if (start.resumed) ReadGeneratorState(archive, "generator_" + std::to_string(me), controllers_[0]->generator);
    world_done_ = start.done;
    DumpParametersForTests("start");
  }

  // After each update across processes: every controller reports its batch
  // (and its best placement, when it improved) to rank 0, which counts the
  // samples, keeps the best of all, writes the curve row and the progress
  // line for the round, checkpoints, and says whether the run goes on.
  void EndRound() {
    ControllerReport mine = round_;
    mine.stop = StopRequested();
    mine.baseline = controllers_[0]->baseline;
    mine.generator_state = GeneratorBytes(controllers_[0]->generator);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (best_unreported_ && !best_placement_.empty()) {
        mine.best = best_placement_;
        mine.best_time_s = best_time_s_;
      }
      best_unreported_ = false;
    }
    const std::vector<std::string> reports = ranks_->ToRankZero(EncodeReport(mine));
    bool done = false;
    if (ranks_->rank() == 0) done = MergeRound(reports);
    world_done_ = ranks_->FromRankZero(done ? "done" : "go") == "done";
  }

  // Rank 0: the round's reports, in controller order (its own first).
  bool MergeRound(const std::vector<std::string>& reports) {
    std::lock_guard<std::mutex> lock(mutex_);
    bool stepped = false, stop = false;
    double sum_time_s = 0;
    int32_t ran = 0, used = 0;
    int64_t measured = 0;
    for (size_t k = 0; k < reports.size(); ++k) {
      const ControllerReport r = DecodeReport(reports[k], problem_.graph.num_ops(), problem_.cluster.num_devices());
      // Rank 0's own best is recorded already; among equal times the
      // first controller's stays.
      if (k > 0 && !r.best.empty()) RecordBest(r.best, r.best_time_s);
      if (k > 0) {
        others_[k].baseline = r.baseline;
        others_[k].generator_state = r.generator_state;
      }
      samples_ += r.samples;
      controller_samples_[k] += r.samples;
      stepped = stepped || r.stepped;
      stop = stop || r.stop;
      sum_time_s += r.sum_time_s;
      ran += r.ran;
      used += r.used;
      measured += r.samples;
    }
    if (stepped && measured > 0) {
      LearnedProgress progress = Progress(sum_time_s, ran, static_cast<size_t>(measured));
      progress.samples_used = used;
      progress.controller_samples = controller_samples_;
      AppendCurveRow(progress, controllers_[0]->baseline, ScheduledLearningRates(options_, step_ - 1).network);
      if (on_step_) on_step_(progress);
      if (CheckpointDue()) SaveCheckpoint();
    }
    return stop || BudgetDone();
  }

  // Measures the policy's start probes (Policy::StartProbes) as samples of
  // the search (they count in its budget, and one may be its first best),
  // then lets the policy choose its start from their times.
  void ProbeStart() {
    const MeasuredProbes probes = MeasureStartProbes(*shared_, *controllers_[0]->environment);
    if (probes.outcomes.empty()) return;
    for (size_t i = 0; i < probes.outcomes.size(); ++i) {
      if (probes.outcomes[i].ok) RecordBest(probes.placements[i], probes.outcomes[i].step_time_s);
      if (probes.outcomes[i].oom()) RecordClosest(probes.placements[i], probes.outcomes[i].memory_overflow);
    }
    samples_ += static_cast<int64_t>(probes.outcomes.size());
    for (auto& controller : controllers_) {
      if (controller->policy != shared_.get()) CopyParameters(*shared_, *controller->policy);
    }
  }

  // Imitates a baseline placement before RL starts (an option, not the
  // default; learned/training/warm_start.h). The target is measured like any
  // sample, as it is (the groups may not express it exactly), so the
  // search's best starts there, and so do the controllers' baselines:
  // started at the failing signal they would reward every early sample and
  // undo the imitation.
  void WarmStart() {
    const Placement target_placement = WarmStartTarget(problem_, options_, *controllers_[0]->environment);
    ImitatePlacement(*shared_, *optimizer_, target_placement, options_);
    Outcome measured = controllers_[0]->environment->MeasureOne(target_placement);
    for (auto& controller : controllers_) {
      if (controller->policy != shared_.get()) CopyParameters(*shared_, *controller->policy);
      if (measured.ok) controller->baseline = std::sqrt(measured.step_time_s);
    }
    if (measured.ok) RecordBest(target_placement, measured.step_time_s);
  }

  bool IsBest(double step_time_s) const { return best_placement_.empty() || step_time_s < best_time_s_; }

  // With the lock held (or before the controllers start): keeps `placement`
  // if it is the fastest so far, and writes it out once the out folder is
  // open (OpenOutput writes it otherwise).
  void RecordBest(Placement placement, double step_time_s) {
    if (!IsBest(step_time_s)) return;
    if (best_placement_.empty()) first_best_unsaved_ = true;
    best_time_s_ = step_time_s;
    best_placement_ = std::move(placement);
    best_file_stale_ = true;
    best_unreported_ = true;
    if (output_open_) WriteBestPlacement();
  }

  void WriteBestPlacement() {
    if (options_.out_dir.empty() || best_placement_.empty()) return;
    SavePlacementFile(PlacementPath(), problem_.graph, problem_.cluster, best_placement_);
    best_file_stale_ = false;
    HoldPoint("best-written");
  }

  // The whole training state in one sealed file (learned/files/checkpoint_file.h),
  // written to a temporary file and renamed, so a crash leaves the previous
  // checkpoint intact. With the lock held, or before the controllers start.
  void SaveCheckpoint() {
    torch::serialize::OutputArchive archive;
    WritePolicyAndOptimizer(archive);
    nlohmann::json baselines = nlohmann::json::array();
    for (auto& c : controllers_) {
      baselines.push_back(c->baseline);
      WriteGeneratorState(archive, "generator_" + std::to_string(c->id), c->generator);
    }
    // Across processes rank 0 keeps the others' states from their last
    // reports, taken at the update this checkpoint is of.
    for (size_t k = 1; ranks_ && k < NumControllers(); ++k) {
      baselines.push_back(others_[k].baseline);
      archive.write("generator_" + std::to_string(k), GeneratorTensor(others_[k].generator_state));
    }
    std::ostringstream tensors;
    archive.save_to(tensors);

    CheckpointParts parts;
    parts.facts = {{"method", options_.method},
                   {"num_ops", problem_.graph.num_ops()},
                   {"num_groups", shared_->num_units()},
                   {"num_devices", problem_.cluster.num_devices()},
                   {"num_controllers", NumControllers()},
                   {"step", step_},
                   {"samples", samples_},
                   {"seconds", Seconds()},
                   {"baselines", baselines},
                   {"best_placement", best_placement_},
                   {"best_time_s", best_time_s_},
                   {"curve", curve_rows_}};
    if (ranks_) parts.facts["controller_samples"] = controller_samples_;
    parts.tensors = tensors.str();
    WriteCheckpointFile(CheckpointPath(), SealCheckpoint(parts));
    budget_.CheckpointWritten();
    first_best_unsaved_ = false;
  }

  // Everything in memory: the out folder is not touched until OpenOutput.
  void LoadCheckpoint() {
    const std::string path = CheckpointPath();
    if (!fs::exists(path)) throw Error(ForMessage(path) + ": no checkpoint to resume from");
    CheckpointParts parts = UnsealCheckpoint(path, ReadTextFile(path));
    const CheckpointFacts facts(path, parts.facts);
    LoadShape(facts);
    LoadPolicy(facts, parts.tensors);
    step_ = facts.Integer("step", 0, INT64_MAX);
    samples_ = facts.Integer("samples", 0, INT64_MAX);
    budget_.SetSecondsBefore(facts.Number("seconds", 0));
    const nlohmann::json& baselines = facts.Array("baselines");
    if (baselines.size() != NumControllers()) facts.Fail("checkpoint's 'baselines' do not match its controllers");
    for (auto& c : controllers_) c->baseline = facts.NumberOf(baselines[c->id], "baselines", 0);
    if (ranks_) {
      others_.resize(NumControllers());
      for (size_t k = 1; k < NumControllers(); ++k) others_[k].baseline = facts.NumberOf(baselines[k], "baselines", 0);
      const nlohmann::json& samples = facts.Array("controller_samples");
      if (samples.size() != NumControllers()) facts.Fail("checkpoint's 'controller_samples' do not match its controllers");
      controller_samples_.clear();
      for (const nlohmann::json& n : samples) controller_samples_.push_back(facts.IntegerOf(n, "controller_samples", 0, INT64_MAX));
    }
    LoadBest(facts);
    LoadCurve(facts);
    AdoptBestPlacementFile();
  }

  void LoadShape(const CheckpointFacts& facts) {
    // Checkpoints from before the learned methods were many have no method:
    // they are the 2017 placer's.
    const nlohmann::json* method = nullptr;
    if (auto it = facts.facts().find("method"); it != facts.facts().end()) method = &*it;
    const std::string saved_method = method == nullptr ? "rl" : method->is_string() ? method->get<std::string>() : "";
    if (saved_method != options_.method) {
      facts.Fail("checkpoint is of method '" + ForMessage(saved_method) + "'; resume it with --method " + ForMessage(saved_method));
    }
    const int64_t ops = facts.Integer("num_ops", 0, INT32_MAX);
    const int64_t groups = facts.Integer("num_groups", 0, INT64_MAX);
    const int64_t devices = facts.Integer("num_devices", 0, INT32_MAX);
    if (ops != problem_.graph.num_ops() || groups != shared_->num_units() || devices != problem_.cluster.num_devices()) {
      facts.Fail("checkpoint is for another graph or cluster (" + std::to_string(ops) + " ops in " + std::to_string(groups) +
                 " groups on " + std::to_string(devices) + " devices)");
    }
    const int64_t controllers = facts.Integer("num_controllers", 1, INT32_MAX);
    if (controllers != static_cast<int64_t>(NumControllers())) {
      facts.Fail("checkpoint has " + std::to_string(controllers) + " controllers; resume with the same --controllers");
    }
  }

  // A policy of other sizes, or one saved before a parameter was added (the
  // stay bias), does not load: say so in one line, not torch's trace.
  // Loading replaces tensors whatever their shape, so shapes are compared.
  void LoadPolicy(const CheckpointFacts& facts, const std::string& tensors) {
    torch::serialize::InputArchive archive;
    try {
      std::istringstream in(tensors);
      archive.load_from(in);
    } catch (const c10::Error&) {
      facts.Fail("checkpoint is damaged (its tensors do not load)");
    }
    const ParameterShapes shapes = ShapesOf(shared_->module());
    try {
      torch::serialize::InputArchive policy_archive;
      archive.read("policy", policy_archive);
      shared_->module().load(policy_archive);
      ReadOptimizerState(archive, *optimizer_);
    } catch (const c10::Error&) {
      facts.Fail("checkpoint's policy is of another architecture (other network sizes, or an older devplace)");
    }
    if (const std::string problem = LoadedParametersProblem(shared_->module(), shapes); !problem.empty()) {
      const bool shapes_differ = problem.find("architecture") != std::string::npos;
      facts.Fail("checkpoint's policy " + problem + (shapes_differ ? " (other network sizes, or an older devplace)" : ""));
    }
    for (auto& c : controllers_) {
      torch::Tensor state;
      if (!archive.try_read("generator_" + std::to_string(c->id), state)) facts.Fail("checkpoint lacks a generator's state");
      try {
        c->generator.set_state(state);
      } catch (const c10::Error&) {
        facts.Fail("checkpoint's generator state is damaged");
      }
      if (c->policy != shared_.get()) CopyParameters(*shared_, *c->policy);
    }
    if (ranks_) others_.resize(NumControllers());
    for (size_t k = 1; ranks_ && k < NumControllers(); ++k) {
      torch::Tensor state;
      if (!archive.try_read("generator_" + std::to_string(k), state) || state.scalar_type() != torch::kUInt8 || state.dim() != 1) {
        facts.Fail("checkpoint lacks controller " + std::to_string(k) + "'s generator state");
      }
      others_[k].generator_state = StateBytes(state);
      try {
        torch::Generator check = ControllerGenerator(static_cast<int32_t>(k));
        check.set_state(state);
      } catch (const c10::Error&) {
        facts.Fail("checkpoint's generator state is damaged");
      }
    }
  }

  // The best placement must be one this graph and cluster can run.
  void LoadBest(const CheckpointFacts& facts) {
    const nlohmann::json& best = facts.Array("best_placement");
    if (best.empty()) return;
    if (best.size() != static_cast<size_t>(problem_.graph.num_ops())) {
      facts.Fail("checkpoint's best placement has " + std::to_string(best.size()) + " ops; the graph has " +
                 std::to_string(problem_.graph.num_ops()));
    }
    Placement placement;
    for (const nlohmann::json& device : best) {
      placement.push_back(static_cast<int32_t>(facts.IntegerOf(device, "best_placement", 0, problem_.cluster.num_devices() - 1)));
    }
    if (auto why = CheckPlacement(problem_.graph, problem_.cluster, placement)) {
      facts.Fail("checkpoint's best placement cannot run: " + *why);
    }
    const double time_s = facts.Number("best_time_s", 0);
    if (time_s <= 0) facts.Fail("checkpoint's 'best_time_s' is not above 0");
    best_placement_ = std::move(placement);
    best_time_s_ = time_s;
  }

  // One whole row per step up to the checkpoint's: the curve on disk is put
  // back to exactly these when the run goes on.
  void LoadCurve(const CheckpointFacts& facts) {
    const nlohmann::json& curve = facts.Field("curve");
    if (!curve.is_string()) facts.Fail("checkpoint's 'curve' is not text");
    curve_rows_ = curve.get<std::string>();
    int64_t row = 0;
    for (size_t at = 0; at < curve_rows_.size();) {
      const size_t end = curve_rows_.find('\n', at);
      if (end == std::string::npos || curve_rows_.compare(at, std::to_string(row + 1).size() + 1, std::to_string(row + 1) + ",") != 0) {
        facts.Fail("checkpoint's curve is damaged at row " + std::to_string(row + 1));
      }
      ++row;
      at = end + 1;
    }
    if (row != step_) facts.Fail("checkpoint's curve has " + std::to_string(row) + " rows for " + std::to_string(step_) + " steps");
  }

  // A better placement found after the checkpoint was written is in the
  // placement file: measure it, and keep the faster of it and the
  // checkpoint's, so that resuming never loses a placement.
  void AdoptBestPlacementFile() {
    if (!fs::exists(PlacementPath())) {
      best_file_stale_ = !best_placement_.empty();
      return;
    }
    Placement on_file = LoadPlacementFile(PlacementPath(), problem_.graph, problem_.cluster);
    if (on_file == best_placement_) return;
    Outcome measured = controllers_[0]->environment->MeasureOne(on_file);
    if (measured.ok && IsBest(measured.step_time_s)) {
      best_placement_ = std::move(on_file);
      best_time_s_ = measured.step_time_s;
    } else {
      best_file_stale_ = !best_placement_.empty();
    }
  }


  const PlacementProblem& problem_;
  const LearnedOptions& options_;
  TrainingBudget budget_;  // seconds, budgets and checkpoint timing
  std::unique_ptr<Algorithm> algorithm_;
  std::unique_ptr<Policy> shared_;  // the parameters every controller updates
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  double failing_reward_ = 0;
  bool grade_failures_ = false;  // RewardOf's: LearnedOptions::failing_signal or the method's default
  LearnedProgressCallback on_step_;
  bool output_open_ = false;   // the out folder has been written to
  int curve_fd_ = -1;          // curve.csv, opened for appending
  bool stopped_in_start_ = false;      // a signal came before the first update

  std::mutex mutex_;  // guards everything below and the shared parameters
  int64_t step_ = 0;
  int64_t samples_ = 0;
  Placement best_placement_;  // op by op: a warm start's target may be finer than the groups
  double best_time_s_ = 0;
  Placement closest_placement_;  // RecordClosest's; not in a checkpoint
  double closest_overflow_ = 0;
  bool best_file_stale_ = false;     // best_placement_ is not yet in the file
  bool first_best_unsaved_ = false;  // the first best is not yet in a checkpoint
  std::string curve_rows_;           // every row so far, for the checkpoint

  // Controllers across processes (LearnedOptions::controller_ranks); null
  // when this process's controllers are all.
  TrainingRanks* ranks_ = nullptr;
  bool world_done_ = false;                  // rank 0's last word
  std::vector<int64_t> controller_samples_;  // rank 0: each controller's samples
  ControllerReport round_;                   // this controller's part of the round
  // Rank 0: the other controllers' states (ControllerReport's baseline and
  // generator), indexed by controller, from their last reports.
  std::vector<ControllerReport> others_;
  bool best_unreported_ = false;             // the best improved since the last report
  int32_t sums_taken_ = 0;                   // this update's sums so far
  bool update_ended_ = false;                // a stop ended this update's sums
};

}  // namespace

LearnedResult TrainLearnedPlacer(const PlacementProblem& problem, const LearnedOptions& options, const LearnedProgressCallback& on_step) {
  ValidateLearnedOptions(options);
  ConfigureProcessForTraining();
  LearnedResult result;
  RunWithOneLineTorchErrors("the learned placer failed in torch", [&] {
    PlaceTrainer trainer(problem, options);
    result = trainer.Run(on_step);
  });
  return result;
}

}  // namespace devplace
