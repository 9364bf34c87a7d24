// REINFORCE training of the seq2seq policy on simulated step times (2017
// §3.1, §3.4): controllers sample K placements each, workers measure them,
// and each controller updates the shared parameters with its own baseline.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "graph/group_order.h"
#include "rl/checkpoint_file.h"
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

// ---- Crash-test hooks -------------------------------------------------
// tests/sigkill_test.cc kills `place` at named moments. With
// DEVPLACE_TEST_HOLD_AT=POINT:N and DEVPLACE_TEST_HOLD_MARKER=FILE set, the
// N-th arrival at POINT creates FILE and waits there to be killed, so the
// test kills at exactly that moment by polling for FILE, with no timing.
// Points: "checkpoint-write" (half the checkpoint's bytes written to its
// temporary file), "checkpoint-rename" (written, not yet renamed),
// "curve-row" (half a curve row written), "best-written" (a new best
// placement written, no checkpoint since), "step-end" (a step done).
struct HoldSpec {
  std::string point;
  int64_t arrival = 1;
  std::string marker;
};

const HoldSpec& Hold() {
  static const HoldSpec spec = [] {
    HoldSpec s;
    const char* at = std::getenv("DEVPLACE_TEST_HOLD_AT");
    const char* marker = std::getenv("DEVPLACE_TEST_HOLD_MARKER");
    if (at == nullptr || marker == nullptr || *marker == '\0') return s;
    std::string text = at;
    const size_t colon = text.rfind(':');
    s.point = text.substr(0, colon);
    if (colon != std::string::npos) s.arrival = std::max<int64_t>(1, std::atoll(text.c_str() + colon + 1));
    s.marker = marker;
    return s;
  }();
  return spec;
}

bool HoldArmed(std::string_view point) { return !Hold().marker.empty() && Hold().point == point; }

void HoldPoint(std::string_view point) {
  if (!HoldArmed(point)) return;
  static std::atomic<int64_t> arrivals{0};
  if (++arrivals != Hold().arrival) return;
  std::ofstream(Hold().marker) << point << "\n";
  // Waits to be killed; the bound only keeps a broken test from leaving a
  // process behind forever.
  for (int i = 0; i < 600; ++i) ::sleep(1);
  std::_Exit(86);
}

// ---- Files --------------------------------------------------------------

[[noreturn]] void FailedWrite(const std::string& path, int error) {
  throw Error(ForMessage(path) + ": cannot write: " + std::strerror(error));
}

void WriteFully(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      FailedWrite(path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Writes `data`; with the crash test's hold armed at `point`, stops there
// half way through, as a kill in the middle of a write would.
void WriteWithHold(int fd, std::string_view data, const std::string& path, std::string_view point) {
  const size_t first = HoldArmed(point) ? data.size() / 2 : data.size();
  WriteFully(fd, data.substr(0, first), path);
  if (first == data.size()) return;
  HoldPoint(point);
  WriteFully(fd, data.substr(first), path);
}

// Replaces the checkpoint at `path` with `bytes` through a synced temporary
// file and a rename: a crash at any moment leaves the old checkpoint or the
// new one, whole.
void WriteCheckpointFile(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) FailedWrite(path, errno);
  try {
    WriteWithHold(fd, bytes, temporary, "checkpoint-write");
    if (::fsync(fd) != 0) FailedWrite(path, errno);
  } catch (...) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
  ::close(fd);
  HoldPoint("checkpoint-rename");
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temporary.c_str());
    FailedWrite(path, error);
  }
}

// The temporary files a run writes next to its outputs
// ("best_placement.json.tmp.<pid>", "checkpoint.pt.tmp.<pid>", ...). A
// killed run leaves them behind: the next run in the folder removes them
// all when it starts, and every run its own when it ends.
void RemoveTemporaries(const fs::path& folder, bool only_this_process) {
  const std::string own_suffix = ".tmp." + std::to_string(::getpid());
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    for (const char* output : {"best_placement.json", "curve.csv", "checkpoint.pt"}) {
      const std::string stem = std::string(output) + ".tmp";
      if (name.rfind(stem, 0) != 0) continue;
      if (only_this_process && name != std::string(output) + own_suffix) continue;
      std::error_code ignored;
      if (entry.is_regular_file(ignored)) fs::remove(entry.path(), ignored);
    }
  }
}

// ---- Validation ---------------------------------------------------------

std::string Show(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

void RequireNumber(double value, double min, double max, const char* flag) {
  if (std::isfinite(value) && value >= min && value <= max) return;
  throw Error(std::string(flag) + " must be a number from " + Show(min) + " to " + Show(max) + ", got " + Show(value));
}

void RequirePositive(double value, double max, const char* flag) {
  if (std::isfinite(value) && value > 0 && value <= max) return;
  throw Error(std::string(flag) + " must be a number above 0 and at most " + Show(max) + ", got " + Show(value));
}

void RequireCount(int64_t value, int64_t min, int64_t max, const char* flag) {
  if (value >= min && value <= max) return;
  throw Error(std::string(flag) + " must be an integer from " + std::to_string(min) + " to " + std::to_string(max) +
              ", got " + std::to_string(value));
}

// Every group must have a device of this cluster that can run it: the
// policy masks the others, and a group with none could only be sampled onto
// a device that cannot run it.
void RequireEveryGroupRunnable(const Graph& graph, const Cluster& cluster, const Grouping& grouping) {
  if (cluster.num_devices() == 0) throw Error("cluster " + ForMessage(cluster.name) + " has no devices");
  CheckClusterCanRun(graph, cluster);  // an op alone, in the baselines' words
  // A merged group whose ops share no kind the cluster has (the grouping
  // keeps kinds apart, so this is a guard).
  DeviceKindMask present = 0;
  for (const Device& d : cluster.devices) present |= MaskOf(d.kind);
  for (const Group& group : grouping.groups) {
    if ((group.device_kinds & present) != 0) continue;
    std::string needs;
    for (int k = 0; k < kNumDeviceKinds; ++k) {
      const DeviceKind kind = static_cast<DeviceKind>(k);
      if (group.device_kinds & MaskOf(kind)) needs += std::string(needs.empty() ? "" : " or ") + DeviceKindName(kind);
    }
    // Name the op that asks for what the cluster lacks, if one does alone.
    int32_t culprit = group.ops.front();
    for (int32_t op : group.ops) {
      if ((graph.op(op).device_kinds & present) == 0) culprit = op;
    }
    throw Error("op '" + ForMessage(graph.op(culprit).name) + "' can run on no device of cluster " +
                ForMessage(cluster.name) + " (its co-location group needs a " + needs + ")");
  }
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
Grouping PolicyGrouping(const Graph& graph, const Cluster& cluster, const std::string& order) {
  Grouping grouping = BuildGrouping(graph, GroupingOptionsFor(cluster));
  if (order == "topological") return grouping;
  if (order != "chain") throw Error("unknown group order '" + ForMessage(order) + "' (chain or topological)");
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

// Reads a checkpoint's facts, each checked for type and range; every
// problem is one Error naming the file.
class CheckpointFacts {
 public:
  CheckpointFacts(const std::string& path, const nlohmann::json& facts) : path_(ForMessage(path)), facts_(facts) {}

  [[noreturn]] void Fail(const std::string& problem) const { throw Error(path_ + ": " + problem); }

  const nlohmann::json& Field(const char* key) const {
    auto it = facts_.find(key);
    if (it == facts_.end()) Fail(std::string("checkpoint lacks '") + key + "'");
    return *it;
  }
  int64_t Integer(const char* key, int64_t min, int64_t max) const { return IntegerOf(Field(key), key, min, max); }
  int64_t IntegerOf(const nlohmann::json& value, const char* key, int64_t min, int64_t max) const {
    if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))) {
      Fail(std::string("checkpoint's '") + key + "' is not an integer");
    }
    const int64_t v = value.get<int64_t>();
    if (v < min || v > max) {
      Fail(std::string("checkpoint's '") + key + "' is " + std::to_string(v) + ", outside " + std::to_string(min) + ".." +
           std::to_string(max));
    }
    return v;
  }
  double Number(const char* key, double min) const { return NumberOf(Field(key), key, min); }
  double NumberOf(const nlohmann::json& value, const char* key, double min) const {
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < min) {
      Fail(std::string("checkpoint's '") + key + "' is not a finite number of at least " + Show(min));
    }
    return value.get<double>();
  }
  const nlohmann::json& Array(const char* key) const {
    const nlohmann::json& value = Field(key);
    if (!value.is_array()) Fail(std::string("checkpoint's '") + key + "' is not a list");
    return value;
  }

 private:
  std::string path_;
  const nlohmann::json& facts_;
};

class Trainer {
 public:
  Trainer(const PlacementProblem& problem, const RlOptions& options)
      : problem_(problem),
        options_(options),
        grouping_(PolicyGrouping(problem.graph, problem.cluster, options.group_order)),
        features_(BuildGroupFeatures(problem.graph, grouping_, problem.cluster)) {
    if (grouping_.num_groups() == 0) throw Error("graph " + ForMessage(problem.graph.name) + " has no ops to place");
    RequireEveryGroupRunnable(problem.graph, problem.cluster, grouping_);
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
    if (!std::isfinite(failing_reward_)) {
      throw Error("cannot pick a failing step time for graph " + ForMessage(problem.graph.name) + " on cluster " +
                  ForMessage(problem.cluster.name) + ": give --failing-runtime");
    }

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
  }

  ~Trainer() {
    if (curve_fd_ >= 0) ::close(curve_fd_);
    if (output_open_) RemoveTemporaries(options_.out_dir, /*only_this_process=*/true);
  }

  RlResult Run(const RlProgressCallback& on_step) {
    start_ = Clock::now();
    // Everything that can fail on the inputs happens before the first write
    // to the out folder, so a refused run leaves nothing behind.
    CheckOutFolder();
    if (options_.resume) {
      LoadCheckpoint();
    } else if (!options_.warm_start.empty()) {
      WarmStart();
    }
    OpenOutput();
    last_checkpoint_ = Clock::now();
    on_step_ = on_step;
    if (controllers_.size() == 1) {
      while (!Done()) Step(*controllers_[0]);
    } else {
      // An exception must not escape a thread (that would terminate the
      // program): the first one stops every controller and is rethrown.
      std::vector<std::thread> threads;
      std::exception_ptr failure;
      std::mutex failure_mutex;
      for (auto& controller : controllers_) {
        threads.emplace_back([this, &controller, &failure, &failure_mutex] {
          try {
            while (!Done() && !stopping_) Step(*controller);
          } catch (...) {
            std::lock_guard<std::mutex> lock(failure_mutex);
            if (!failure) failure = std::current_exception();
            stopping_ = true;
          }
        });
      }
      for (auto& t : threads) t.join();
      if (failure) std::rethrow_exception(failure);
    }
    if (CheckpointsOn()) SaveCheckpoint();

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
  bool CheckpointsOn() const {
    return !options_.out_dir.empty() && (options_.checkpoint_every > 0 || options_.checkpoint_seconds > 0);
  }

  bool Done() const {
    if (options_.max_steps > 0 && step_ >= options_.max_steps) return true;
    if (options_.max_samples > 0 && samples_ >= options_.max_samples) return true;
    if (options_.max_seconds > 0 && Seconds() >= options_.max_seconds) return true;
    return options_.max_steps <= 0 && options_.max_samples <= 0 && options_.max_seconds <= 0;
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
    AppendCurveRow(progress, controller.baseline, LearningRate(step));
    if (on_step_) on_step_(progress);
    if (CheckpointDue()) SaveCheckpoint();
    HoldPoint("step-end");
  }

  // With the lock held: one row per step, kept in memory for the checkpoint
  // and appended to the file in one write.
  void AppendCurveRow(const RlProgress& progress, double baseline, double learning_rate) {
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
    if (options_.checkpoint_every > 0 && step_ % options_.checkpoint_every == 0) return true;
    return options_.checkpoint_seconds > 0 &&
           std::chrono::duration<double>(Clock::now() - last_checkpoint_).count() >= options_.checkpoint_seconds;
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
    if (options_.warm_start != "best") {
      const PlacerInfo* placer = nullptr;
      try {
        placer = &FindPlacer(options_.warm_start);
      } catch (const Error& e) {
        throw Error("--warm-start " + ForMessage(options_.warm_start) + ": no such file, and " + e.what());
      }
      return placer->place(problem_).placement;
    }
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
    if (auto why = CheckPlacement(problem_.graph, problem_.cluster, target_placement)) {
      throw Error("--warm-start " + ForMessage(options_.warm_start) + ": its placement cannot run: " + *why);
    }
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
  // if it is the fastest so far, and writes it out once the out folder is
  // open (OpenOutput writes it otherwise).
  void RecordBest(Placement placement, double step_time_s) {
    if (!IsBest(step_time_s)) return;
    if (best_placement_.empty()) first_best_unsaved_ = true;
    best_time_s_ = step_time_s;
    best_placement_ = std::move(placement);
    best_file_stale_ = true;
    if (output_open_) WriteBestPlacement();
  }

  void WriteBestPlacement() {
    if (options_.out_dir.empty() || best_placement_.empty()) return;
    SavePlacementFile(PlacementPath(), problem_.graph, problem_.cluster, best_placement_);
    best_file_stale_ = false;
    HoldPoint("best-written");
  }

  // The whole training state in one sealed file (rl/checkpoint_file.h),
  // written to a temporary file and renamed, so a crash leaves the previous
  // checkpoint intact. With the lock held, or before the controllers start.
  void SaveCheckpoint() {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive policy_archive;
    shared_->save(policy_archive);
    archive.write("policy", policy_archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer_->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    nlohmann::json baselines = nlohmann::json::array();
    for (auto& c : controllers_) {
      baselines.push_back(c->baseline);
      archive.write("generator_" + std::to_string(c->id), c->generator.get_state());
    }
    std::ostringstream tensors;
    archive.save_to(tensors);

    CheckpointParts parts;
    parts.facts = {{"num_ops", problem_.graph.num_ops()},
                   {"num_groups", grouping_.num_groups()},
                   {"num_devices", problem_.cluster.num_devices()},
                   {"num_controllers", controllers_.size()},
                   {"step", step_},
                   {"samples", samples_},
                   {"seconds", Seconds()},
                   {"baselines", baselines},
                   {"best_placement", best_placement_},
                   {"best_time_s", best_time_s_},
                   {"curve", curve_rows_}};
    parts.tensors = tensors.str();
    WriteCheckpointFile(CheckpointPath(), SealCheckpoint(parts));
    last_checkpoint_ = Clock::now();
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
    seconds_before_ = facts.Number("seconds", 0);
    const nlohmann::json& baselines = facts.Array("baselines");
    if (baselines.size() != controllers_.size()) facts.Fail("checkpoint's 'baselines' do not match its controllers");
    for (auto& c : controllers_) c->baseline = facts.NumberOf(baselines[c->id], "baselines", 0);
    LoadBest(facts);
    LoadCurve(facts);
    AdoptBestPlacementFile();
  }

  void LoadShape(const CheckpointFacts& facts) {
    const int64_t ops = facts.Integer("num_ops", 0, INT32_MAX);
    const int64_t groups = facts.Integer("num_groups", 0, INT32_MAX);
    const int64_t devices = facts.Integer("num_devices", 0, INT32_MAX);
    if (ops != problem_.graph.num_ops() || groups != grouping_.num_groups() || devices != problem_.cluster.num_devices()) {
      facts.Fail("checkpoint is for another graph or cluster (" + std::to_string(ops) + " ops in " + std::to_string(groups) +
                 " groups on " + std::to_string(devices) + " devices)");
    }
    const int64_t controllers = facts.Integer("num_controllers", 1, INT32_MAX);
    if (controllers != static_cast<int64_t>(controllers_.size())) {
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
      facts.Fail("checkpoint's policy does not match this one (other network sizes, or an older devplace)");
    }
    auto loaded = shared_->parameters();
    for (size_t i = 0; i < loaded.size(); ++i) {
      if (loaded[i].sizes().vec() != shapes[i]) {
        facts.Fail("checkpoint's policy does not match this one (other network sizes, or an older devplace)");
      }
      if (!torch::isfinite(loaded[i]).all().item<bool>()) facts.Fail("checkpoint's policy has values that are not finite");
    }
    for (auto& c : controllers_) {
      torch::Tensor state;
      if (!archive.try_read("generator_" + std::to_string(c->id), state)) facts.Fail("checkpoint lacks a generator's state");
      try {
        c->generator.set_state(state);
      } catch (const c10::Error&) {
        facts.Fail("checkpoint's generator state is damaged");
      }
      if (c->policy.get() != shared_.get()) CopyParameters(shared_, c->policy);
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
    Evaluator::Outcome measured = controllers_[0]->evaluator->MeasurePlacement(on_file);
    if (measured.ok && IsBest(measured.step_time_s)) {
      best_placement_ = std::move(on_file);
      best_time_s_ = measured.step_time_s;
    } else {
      best_file_stale_ = !best_placement_.empty();
    }
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
  bool output_open_ = false;   // the out folder has been written to
  int curve_fd_ = -1;          // curve.csv, opened for appending
  std::atomic<bool> stopping_{false};  // a controller failed: the others stop too

  std::mutex mutex_;  // guards everything below and the shared parameters
  int64_t step_ = 0;
  int64_t samples_ = 0;
  double seconds_before_ = 0;  // from before a resume
  Clock::time_point start_;
  Clock::time_point last_checkpoint_;
  Placement best_placement_;  // op by op: a warm start's target may be finer than the groups
  double best_time_s_ = 0;
  bool best_file_stale_ = false;     // best_placement_ is not yet in the file
  bool first_best_unsaved_ = false;  // the first best is not yet in a checkpoint
  std::string curve_rows_;           // every row so far, for the checkpoint
};

}  // namespace

void ValidateRlOptions(const RlOptions& o) {
  RequireCount(o.max_steps, 0, INT64_MAX, "--max-steps");
  RequireNumber(o.max_seconds, 0, 1e9, "--max-seconds");
  RequireCount(o.max_samples, 0, INT64_MAX, "--max-samples");
  RequireCount(o.samples_per_step, 1, 1024, "--samples-per-step");
  RequireCount(o.controllers, 1, 64, "--controllers");
  RequireCount(o.worker_threads, 0, 256, "--workers");
  // Past these bounds the policy's float arithmetic overflows into NaN
  // (C * tanh(x / T) with T near 0, a bonus or noise near float's range).
  RequirePositive(o.learning_rate, 1, "--learning-rate");
  RequireNumber(o.lr_decay, 0, 1, "--lr-decay");
  RequireCount(o.lr_decay_every, 0, INT64_MAX, "--lr-decay-every");
  RequireCount(o.lr_decay_start, 0, INT64_MAX, "--lr-decay-start");
  RequirePositive(o.grad_clip_norm, 1e9, "--grad-clip");
  RequireNumber(o.baseline_decay, 0, 1, "--baseline-decay");
  RequireNumber(o.failing_runtime_s, 0, 1e9, "--failing-runtime");
  RequireCount(o.cutover_step, 0, INT64_MAX, "--cutover-step");
  RequireNumber(o.entropy_weight, 0, 1e6, "--entropy-weight");
  RequireNumber(o.logit_noise_std, 0, 1e3, "--logit-noise");
  RequireCount(o.logit_noise_steps, 0, INT64_MAX, "--logit-noise-steps");
  RequirePositive(o.tanh_constant, 1e3, "--tanh-constant");
  RequireNumber(o.temperature, 1e-3, 1e3, "--temperature");
  RequireNumber(o.stay_bias, -100, 100, "--stay-bias");
  RequireCount(o.encoder_hidden, 1, 4096, "--encoder-hidden");
  RequireCount(o.decoder_hidden, 1, 4096, "--decoder-hidden");
  if (o.group_order != "chain" && o.group_order != "topological") {
    throw Error("--group-order must be chain or topological, got '" + ForMessage(o.group_order) + "'");
  }
  RequireNumber(o.jitter, 0, 10, "--jitter");
  RequireNumber(o.failure_probability, 0, 1, "--failure-probability");
  RequireCount(o.measure_steps, 1, 1000, "--measure-steps");
  RequireCount(o.checkpoint_every, 0, INT64_MAX, "--checkpoint-every");
  RequireNumber(o.checkpoint_seconds, 0, 1e9, "--checkpoint-seconds");
  RequireCount(o.warm_start_steps, 0, INT64_MAX, "--warm-start-steps");
}

RlResult TrainRlPlacer(const PlacementProblem& problem, const RlOptions& options, const RlProgressCallback& on_step) {
  ValidateRlOptions(options);
  // Parallelism comes from workers and controllers; torch's own intra-op
  // threads would only fight them for the cores.
  torch::set_num_threads(1);
  // Autograd allocates and frees megabyte-sized gradient buffers at every
  // decoder step; served by mmap, each costs page faults. Keeping them on
  // the heap makes training about twice as fast.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  try {
    Trainer trainer(problem, options);
    return trainer.Run(on_step);
  } catch (const c10::Error& e) {
    // torch's message comes with its C++ stack trace: its first line says
    // what was wrong.
    std::string what = e.what_without_backtrace();
    what = what.substr(0, what.find('\n'));
    throw Error("the learned placer failed in torch: " + ForMessage(what, 300));
  }
}

}  // namespace devplace
