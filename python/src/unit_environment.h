// The C++ side of devplace.PlacementEnv: a graph's units of placement (the
// co-location groups the 2017 placer reads, single-consumer merge bounded by
// the cluster's memory; learned/policies/seq2seq_policy.cc), what the
// learned placers see of them (learned/features/group_features.h), and a
// device per unit scored as the learning core scores a sample: measured by
// the SimulatedEnvironment the trainers measure in, rewarded by RewardOf
// with the failing signal (learned/training/reward.h).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/grouping.h"
#include "learned/features/group_features.h"
#include "sim/environment.h"
#include "simulation.h"

namespace devplace::python {

struct UnitEnvironmentOptions {
  std::string failing_signal = "graded";  // "flat" or "graded", as --failing-signal
  double failing_runtime_s = 0;           // 0: picked per graph, as --failing-runtime 0
};

struct UnitScore {
  bool ok = false;             // ran: no device out of memory, a valid placement
  bool oom = false;
  double step_time_s = 0;      // if it ran
  double memory_overflow = 0;  // out of memory: the share of its peak memory beyond capacity
  // The learning core's reward, lower is better: sqrt(step time), or the
  // failing signal (RewardOf).
  double learning_cost = 0;
  // The environment's reward, in seconds, higher is better: minus the step
  // time, or minus the step time the learning core charges a failure (the
  // square of its cost: failing_runtime_s, times (1 + overflow)^2 graded).
  double reward = 0;
};

class UnitEnvironment {
 public:
  UnitEnvironment(std::shared_ptr<Simulation> simulation, const UnitEnvironmentOptions& options);

  const Graph& graph() const { return simulation_->graph(); }
  const Cluster& cluster() const { return simulation_->cluster(); }
  const Grouping& grouping() const { return grouping_; }
  const GroupFeatures& features() const { return features_; }
  int32_t num_units() const { return grouping_.num_groups(); }
  int32_t num_devices() const { return simulation_->cluster().num_devices(); }
  double failing_runtime_s() const { return failing_reward_ * failing_reward_; }
  bool grades_failures() const { return grade_failures_; }

  // The op-by-op placement of a device per unit (sizes and ranges checked by the caller).
  Placement ToPlacement(const std::vector<int32_t>& unit_devices) const;
  // Each placement measured (over the workers) and scored.
  std::vector<UnitScore> Score(const std::vector<std::vector<int32_t>>& unit_devices);

 private:
  std::shared_ptr<Simulation> simulation_;
  Grouping grouping_;
  GroupFeatures features_;
  bool grade_failures_ = true;
  double failing_reward_ = 0;  // sqrt of the failing step time, as RewardOf takes it
  std::mutex mutex_;  // one Score at a time
  std::unique_ptr<SimulatedEnvironment> environment_;
  int64_t batches_ = 0;
};

}  // namespace devplace::python
