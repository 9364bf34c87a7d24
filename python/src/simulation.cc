#include "simulation.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "cli/inputs.h"

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
  std::vector<std::exception_ptr> errors(workers);
  auto work = [&](size_t w) {
    try {
      for (size_t k = w; k < placements.size(); k += workers) results[k] = simulators_[w]->Run(placements[k]);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  if (workers <= 1) {
    if (!placements.empty()) work(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers; ++w) threads.emplace_back(work, w);
    for (auto& t : threads) t.join();
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return results;
}

}  // namespace devplace::python
