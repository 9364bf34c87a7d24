#include "unit_environment.h"

#include <cmath>

#include "learned/learned_placer.h"
#include "learned/training/reward.h"
#include "placers/placer.h"
#include "util/error.h"

namespace devplace::python {

UnitEnvironment::UnitEnvironment(std::shared_ptr<Simulation> simulation, const UnitEnvironmentOptions& options)
    : simulation_(std::move(simulation)) {
  if (options.failing_signal != "flat" && options.failing_signal != "graded") {
    throw Error("failing_signal must be flat or graded, got '" + ForMessage(options.failing_signal) + "'");
  }
  if (!(options.failing_runtime_s >= 0) || !std::isfinite(options.failing_runtime_s)) {
    throw Error("failing_runtime_s must be a finite number of seconds, 0 (picked per graph) or more, got " +
                ShowNumber(options.failing_runtime_s));
  }
  grade_failures_ = options.failing_signal == "graded";
  const Graph& graph = simulation_->graph();
  const Cluster& cluster = simulation_->cluster();
  CheckClusterCanRun(graph, cluster);
  grouping_ = BuildGrouping(graph, GroupingOptionsFor(cluster));
  CheckGroupsCanRun(graph, cluster, grouping_);
  features_ = BuildGroupFeatures(graph, grouping_, cluster);

  LearnedOptions learned;
  learned.failing_runtime_s = options.failing_runtime_s;
  {
    std::lock_guard<std::mutex> lock(simulation_->mutex());
    PlacementProblem problem{graph, cluster, simulation_->cost(), simulation_->simulator()};
    failing_reward_ = FailingRewardOf(problem, learned);
  }
  // As the trainers measure (MakeTrainingEnvironment): deterministic, one
  // step, the overflow measured where failures are graded.
  SimulatedEnvironmentOptions environment;
  environment.workers = simulation_->workers();
  environment.measure_overflow = grade_failures_;
  environment_ = std::make_unique<SimulatedEnvironment>(graph, cluster, simulation_->cost(), environment);
}

Placement UnitEnvironment::ToPlacement(const std::vector<int32_t>& unit_devices) const {
  return ExpandGroupPlacement(grouping_, unit_devices);
}

std::vector<UnitScore> UnitEnvironment::Score(const std::vector<std::vector<int32_t>>& unit_devices) {
  std::vector<Placement> placements;
  placements.reserve(unit_devices.size());
  for (const auto& devices : unit_devices) placements.push_back(ToPlacement(devices));
  // The deterministic environment ignores the batch number; it only keeps
  // the noise streams of successive batches apart.
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Outcome> outcomes = environment_->Measure(placements, batches_++, 0);
  std::vector<UnitScore> scores(outcomes.size());
  for (size_t k = 0; k < outcomes.size(); ++k) {
    const Outcome& o = outcomes[k];
    UnitScore& s = scores[k];
    s.ok = o.ok;
    s.oom = o.oom();
    s.step_time_s = o.ok ? o.step_time_s : 0;
    s.memory_overflow = o.memory_overflow;
    s.learning_cost = RewardOf(o, failing_reward_, grade_failures_);
    s.reward = o.ok ? -o.step_time_s : -(s.learning_cost * s.learning_cost);
  }
  return scores;
}

}  // namespace devplace::python
