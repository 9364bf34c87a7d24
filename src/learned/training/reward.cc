#include "learned/training/reward.h"

#include <cmath>

#include "sim/lower_bound.h"
#include "sim/placement.h"
#include "util/error.h"

namespace devplace {

double RewardOf(const Outcome& outcome, double failing_reward, bool grade_failures) {
  if (outcome.ok) return std::sqrt(outcome.step_time_s);
  if (grade_failures && outcome.oom()) return failing_reward * (1 + outcome.memory_overflow);
  return failing_reward;
}

double AutomaticFailingRuntimeS(const PlacementProblem& problem) {
  std::vector<int32_t> cpus = DevicesOfKind(problem.cluster, DeviceKind::kCpu);
  if (!cpus.empty()) {
    SimResult cpu = problem.simulator.Run(SingleDevicePlacement(problem.graph, problem.cluster, cpus.front()));
    if (cpu.ok()) return 2 * cpu.step_time_s();
  }
  return 10e-6 * StepTimeLowerBound(problem.graph, problem.cluster, problem.cost).step_time_us();
}

double FailingRewardOf(const PlacementProblem& problem, const LearnedOptions& options) {
  const double reward =
      std::sqrt(options.failing_runtime_s > 0 ? options.failing_runtime_s : AutomaticFailingRuntimeS(problem));
  if (!std::isfinite(reward)) {
    throw Error("cannot pick a failing step time for graph " + ForMessage(problem.graph.name) + " on cluster " +
                ForMessage(problem.cluster.name) + ": give --failing-runtime");
  }
  return reward;
}

}  // namespace devplace
