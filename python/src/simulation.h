// A graph, a cluster and their cost model held together with simulators
// over them: what the Python module's Simulator, place() and environment
// share. The Python objects it came from may go; it keeps the graph and
// cluster alive. One call at a time runs on it (a lock), each with Python's
// lock released.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "sim/placement.h"
#include "sim/simulator.h"

namespace devplace::python {

class Simulation {
 public:
  // `op_times`: a --op-times table (empty: none), its entries all matching
  // unless `allow_unmatched_op_times`. `workers`: the threads a batch uses
  // (0: one per core).
  Simulation(std::shared_ptr<const Graph> graph, std::shared_ptr<const Cluster> cluster, const std::string& op_times,
             bool allow_unmatched_op_times, int32_t workers);

  const Graph& graph() const { return *graph_; }
  const Cluster& cluster() const { return *cluster_; }
  const CostModel& cost() const { return *cost_; }
  const std::shared_ptr<const Graph>& graph_ptr() const { return graph_; }
  const std::shared_ptr<const Cluster>& cluster_ptr() const { return cluster_; }
  int32_t workers() const { return workers_; }

  // Held while a call uses the simulators.
  std::mutex& mutex() { return mutex_; }
  // The first simulator (the lock held).
  Simulator& simulator() { return *simulators_.front(); }

  // Each placement simulated as `devplace simulate` does (one step, no
  // noise), spread over the workers, each with a simulator of its own; the
  // lock held.
  std::vector<SimResult> RunBatch(const std::vector<Placement>& placements);

 private:
  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<const Cluster> cluster_;
  std::unique_ptr<CostModel> cost_;
  int32_t workers_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Simulator>> simulators_;  // made as batches need them
};

}  // namespace devplace::python
