#include "learned/training/warm_start.h"

#include <filesystem>

#include "learned/learned_placer.h"
#include "learned/training/optimizer.h"
#include "placers/search_cost.h"
#include "sim/placement.h"
#include "util/error.h"
#include "util/stop_request.h"

namespace devplace {
namespace {

Placement NamedTarget(const PlacementProblem& problem, const LearnedOptions& options, Environment& environment) {
  if (std::filesystem::exists(options.warm_start)) return LoadPlacementFile(options.warm_start, problem.graph, problem.cluster);
  if (options.warm_start != "best") {
    const PlacerInfo* placer = nullptr;
    try {
      placer = &FindPlacer(options.warm_start);
    } catch (const Error& e) {
      throw Error("--warm-start " + ForMessage(options.warm_start) + ": no such file, and " + e.what());
    }
    return placer->place(problem).placement;
  }
  Placement best;
  Outcome best_outcome;
  SearchCost best_cost;  // simulated, for a best that did not run
  for (const PlacerInfo& placer : ListPlacers()) {
    if (placer.name == "random") continue;  // not a method anyone would start from
    Placement candidate = placer.place(problem).placement;
    Outcome outcome = environment.MeasureOne(candidate);
    SearchCost cost;
    if (!outcome.ok) cost = SearchCostOf(problem.simulator.Run(candidate), problem.cluster);
    const bool better = best.empty() || (outcome.ok != best_outcome.ok ? outcome.ok
                                         : outcome.ok                 ? outcome.step_time_s < best_outcome.step_time_s
                                                                      : Better(cost, best_cost));
    if (better) {
      best = std::move(candidate);
      best_outcome = outcome;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace

Placement WarmStartTarget(const PlacementProblem& problem, const LearnedOptions& options, Environment& environment) {
  Placement target = NamedTarget(problem, options, environment);
  if (auto why = CheckPlacement(problem.graph, problem.cluster, target)) {
    throw Error("--warm-start " + ForMessage(options.warm_start) + ": its placement cannot run: " + *why);
  }
  return target;
}

void ImitatePlacement(Policy& policy, torch::optim::Adam& optimizer, const Placement& target_placement, const LearnedOptions& options) {
  const Decision target = policy.Imitate(target_placement);
  const double num_choices = static_cast<double>(target.size());
  for (int64_t i = 0; i < options.warm_start_steps; ++i) {
    ThrowIfStopRequested();
    torch::Tensor loss = -policy.Begin()->Score({target}).log_prob.mean();
    if (loss.item<double>() / num_choices < 0.01) break;
    policy.module().zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(policy.module().parameters(), options.grad_clip_norm);
    SetLearningRates(optimizer, {0.01, 0.01});  // supervised: a larger step is safe; 300 steps imitate a pipeline over 170 groups
    optimizer.step();
  }
}

}  // namespace devplace
