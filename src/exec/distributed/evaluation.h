// Placements measured across the ranks of a World: rank 0 (the controller)
// splits each batch between itself and the workers still answering; each
// worker measures its slice with its own simulator and sends the outcomes
// back. A worker that does not answer within the world's timeout (dead,
// hung, cut off) is dropped and its slice dealt again over the ranks still
// measuring (rank 0 alone once no worker is left), so no placement is lost
// and the run goes on. Each slice keeps its samples' place in the batch, so
// the noise (sim/environment.h) is the same as in one process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "exec/distributed/world.h"
#include "sim/environment.h"

namespace devplace {

// Rank 0's side: who is still answering, and the next message number to
// each.
class EvaluationPool {
 public:
  // `controller_measures`: this rank (the controller: rank 0, or the first
  // of its group under --controllers) measures a share of each batch, the
  // smallest; false: the workers measure it all, and the controller
  // measures only once no worker is left. `workers`: the ranks that measure
  // for it (none: it measures alone); not given: every other rank of the
  // world.
  explicit EvaluationPool(World& world, bool controller_measures = true,
                          std::optional<std::vector<int32_t>> workers = std::nullopt);
  // Tells the workers still answering to stop; Finish says it first.
  ~EvaluationPool();

  // How rank 0 measures a slice itself: the placements, and the first's
  // place in the batch.
  using LocalMeasure = std::function<std::vector<Outcome>(const std::vector<Placement>& slice, int32_t first_sample)>;

  // The outcomes of `placements` as samples of (batch, stream), measured
  // as `options` says; rank 0 measures its share (and any dropped
  // worker's) with `local`. One batch at a time across the callers.
  std::vector<Outcome> Measure(const LocalMeasure& local, const SimulatedEnvironmentOptions& options,
                               const std::vector<Placement>& placements, int64_t batch, int32_t stream);

  // Tells each worker still answering to stop: exit 0, or with an error
  // saying the controller failed (`failed`). Once; later calls do nothing.
  void Finish(bool failed);

  std::vector<int32_t> live_workers() const;
  int64_t dropped_workers() const;
  // Placements the workers have measured and answered for, all told.
  int64_t placements_measured_by_workers() const;

 private:
  // Placements [first, first + count) of a batch.
  struct Range {
    size_t first, count;
  };
  struct Sent {
    size_t worker;
    Range range;
    int64_t message;
  };
  // Sends each worker still answering its slice of every range (appended to
  // `sent`) and returns this rank's slices, to measure while they do.
  std::vector<Range> Deal(const std::vector<Range>& ranges, const std::vector<Placement>& placements,
                          const SimulatedEnvironmentOptions& options, int64_t batch, int32_t stream,
                          std::vector<Sent>& sent);
  // Marks a worker dropped and tells it so, should it be only slow.
  void Drop(size_t worker);
  // The ranks a dropped worker's placements go to, as a line says them.
  std::string TakersLine() const;
  World& world_;
  bool controller_measures_;
  mutable std::mutex mutex_;
  std::vector<int32_t> ranks_;  // the workers
  std::vector<bool> live_;
  std::vector<int64_t> next_message_;
  int64_t measured_by_workers_ = 0;
  bool finished_ = false;
};

// An Environment over the pool: what a learned method's controller
// measures its batches in. MeasureOne runs on rank 0.
class DistributedEnvironment : public Environment {
 public:
  // `graph`, `cluster`, `cost`, `pool` and `measured` must outlive it.
  // `measured` (--reward measured): rank 0's own real runs, on its own
  // devices, in place of its simulator; null: simulated.
  DistributedEnvironment(EvaluationPool& pool, const Graph& graph, const Cluster& cluster, const CostModel& cost,
                         const SimulatedEnvironmentOptions& options, Environment* measured = nullptr);
  std::vector<Outcome> Measure(const std::vector<Placement>& placements, int64_t batch, int32_t stream) override;
  Outcome MeasureOne(const Placement& placement) override;
  bool simulated() const override { return measured_ == nullptr; }

 private:
  EvaluationPool& pool_;
  SimulatedEnvironmentOptions options_;
  SimulatedEnvironment local_;
  Environment* measured_;
};

// A worker's loop: measures the slices rank 0 sends until it says stop,
// with its own simulator, or with `measured` (--reward measured: real runs
// on this rank's own devices) when given. Throws Error when rank 0 ends
// without saying so, or says it failed. `controller`: the rank that sends
// the slices (0, or its group's first under --controllers), as lines name it.
void ServeEvaluations(World& world, const Graph& graph, const Cluster& cluster, const CostModel& cost,
                      Environment* measured = nullptr, int32_t controller = 0);

}  // namespace devplace
