#include "simulation.h"

#include <algorithm>
#include <thread>

#include "cli/inputs.h"
#include "util/parallel_for.h"

namespace devplace::python {

Simulation::Simulation(std::shared_ptr<const Graph> graph, std::shared_ptr<const Cluster> cluster,
                       const std::string& op_times, bool allow_unmatched_op_times, int32_t workers)
    : graph_(std::move(graph)), cluster_(std::move(cluster)) {
  OpTimesFlags flags;
  flags.path = op_times;
  flags.allow_unmatched = allow_unmatched_op_times;
  cost_ = std::make_unique<CostModel>(MakeCostModel(*cluster_, *graph_, flags));
  workers_ = workers > 0 ? workers : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  simulators_.push_back(std::make_unique<Simulator>(*graph_, *cluster_, *cost_));
}

std::vector<SimResult> Simulation::RunBatch(const std::vector<Placement>& placements) {
  std::vector<SimResult> results(placements.size());
  const size_t workers = std::min(static_cast<size_t>(workers_), placements.size());
  while (simulators_.size() < workers) simulators_.push_back(std::make_unique<Simulator>(*graph_, *cluster_, *cost_));
  StridedParallelFor(placements.size(), workers,
                     [&](size_t w, size_t k) { results[k] = simulators_[w]->Run(placements[k]); });
  return results;
}

}  // namespace devplace::python
