// Environments that judge placements by running them on this machine's
// devices (issue 17): what `devplace place --reward measured|calibrated`
// trains and searches on, in place of the simulator alone.
//
// measured: every placement runs on the real executor by the papers'
// protocol (several steps, the first dropped, the mean of the rest); a run
// that fails (out of memory, a kernel error, the time limit) is a failed
// placement, never a crash.
//
// calibrated: the simulator (given the op times `devplace profile` measured)
// judges every placement; now and then the best few it has seen run for
// real, and both times are kept, so a user sees what the simulator's
// ranking is worth on this machine.
//
// Real runs share the machine's devices, so they run one at a time
// whatever the batch. This header does not include torch.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <set>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "sim/environment.h"

namespace devplace {

class Executor;

struct MeasuredEnvironmentOptions {
  int32_t steps = 3;              // the protocol: run this many (at least 2), drop the first, average
  double step_time_limit_s = 30;  // a step still running after this fails ("time limit")
  uint64_t seed = 0;              // the values of the step's inputs and variables
};

// One real measurement of one placement.
struct RealRun {
  Outcome outcome;
  std::string failure;  // why it did not run ("" when it ran)
};

class MeasuredEnvironment : public Environment {
 public:
  // `graph` and `cluster` must outlive the environment; throws Error when
  // the cluster is not this machine (exec/executor.h).
  MeasuredEnvironment(const Graph& graph, const Cluster& cluster, const MeasuredEnvironmentOptions& options);
  ~MeasuredEnvironment() override;

  std::vector<Outcome> Measure(const std::vector<Placement>& placements, int64_t batch, int32_t stream) override;
  Outcome MeasureOne(const Placement& placement) override;

  // A placement run for real, with the reason when it failed.
  RealRun Run(const Placement& placement);
  int64_t runs() const { return runs_; }

 private:
  MeasuredEnvironmentOptions options_;
  std::unique_ptr<Executor> executor_;
  int64_t runs_ = 0;
};

struct CalibratedEnvironmentOptions {
  SimulatedEnvironmentOptions simulated;
  int32_t remeasure_every_batches = 10;  // how often the best placements run for real
  int32_t remeasure_best = 3;            // how many of the best, each run for real once
};

// A placement the simulator ranked among the best, run for real.
struct Remeasurement {
  int64_t batches = 0;  // batches measured when it ran
  double simulated_s = 0;
  RealRun real;
};

class CalibratedEnvironment : public Environment {
 public:
  // `graph`, `cluster`, `cost` (the calibrated cost model) and `real` (what
  // runs placements for real) must outlive the environment.
  CalibratedEnvironment(const Graph& graph, const Cluster& cluster, const CostModel& cost,
                        const CalibratedEnvironmentOptions& options, MeasuredEnvironment& real);
  // The same, its batches simulated by `simulated` (across processes: the
  // world's environment, whose ranks simulate them with the calibrated
  // cost model) instead of a simulator of its own.
  CalibratedEnvironment(std::unique_ptr<Environment> simulated, const CalibratedEnvironmentOptions& options,
                        MeasuredEnvironment& real);
  ~CalibratedEnvironment() override;

  std::vector<Outcome> Measure(const std::vector<Placement>& placements, int64_t batch, int32_t stream) override;
  Outcome MeasureOne(const Placement& placement) override;

  // Runs the best placements not run yet (what Measure does now and then).
  void RemeasureBest();
  const std::vector<Remeasurement>& remeasured() const { return remeasured_; }

 private:
  void Consider(const Placement& placement, const Outcome& outcome);

  CalibratedEnvironmentOptions options_;
  std::unique_ptr<Environment> simulated_;
  MeasuredEnvironment& real_;
  int64_t batches_ = 0;
  // The best placements the simulator has seen, fastest first, at most
  // remeasure_best of them; and those already run for real.
  std::vector<std::pair<double, Placement>> best_;
  std::set<Placement> run_;
  std::vector<Remeasurement> remeasured_;
};

}  // namespace devplace
