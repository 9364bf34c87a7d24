#include "learned/training/search_targets.h"

#include "placers/placer.h"
#include "util/error.h"

namespace devplace {

Decision SearchTarget(const PlacementProblem& problem, const Policy& policy, int64_t evaluations) {
  PlacementProblem searched{problem.graph, problem.cluster, problem.cost, problem.simulator, problem.seed};
  // Evaluations only: a budget in seconds would make the target depend on
  // the machine's speed and load.
  searched.budget.max_evaluations = evaluations;
  return policy.Imitate(FindPlacer("mcmc").place(searched).placement);
}

torch::Tensor ImitationLoss(PolicyPass& pass, const Decision& target) {
  return -pass.Score({target}).log_prob.sum();
}

}  // namespace devplace
