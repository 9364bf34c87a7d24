#include "learned/training/search_targets.h"

#include <cmath>

#include "util/error.h"

namespace devplace {

Decision SearchTarget(const PlacementProblem& problem, const Policy& policy, int64_t evaluations) {
  PlacementProblem searched{problem.graph, problem.cluster, problem.cost, problem.simulator, problem.seed};
  // Evaluations only: a budget in seconds would make the target depend on
  // the machine's speed and load.
  searched.budget.max_evaluations = evaluations;
  return policy.Imitate(FindPlacer("mcmc").place(searched).placement);
}

std::vector<double> ChoiceWeights(const Graph& graph, const Policy& policy, bool by_flops) {
  const std::vector<int32_t> choice_of_op = policy.ChoiceOfOp();
  if (!by_flops || choice_of_op.size() != static_cast<size_t>(graph.num_ops())) return {};
  std::vector<double> weights(static_cast<size_t>(policy.num_units()), 0.0);
  double total = 0;
  for (int32_t op = 0; op < graph.num_ops(); ++op) {
    const int32_t choice = choice_of_op[op];
    if (choice < 0 || choice >= static_cast<int32_t>(weights.size())) throw Error("internal: an op of no choice");
    const double flops = std::isfinite(graph.op(op).flops) && graph.op(op).flops > 0 ? graph.op(op).flops : 0.0;
    weights[choice] += flops;
    total += flops;
  }
  const double n = static_cast<double>(weights.size());
  const double floor = total > 0 ? 0.01 * total / n : 1.0;
  double sum = 0;
  for (double& w : weights) sum += (w += floor);
  for (double& w : weights) w *= n / sum;
  return weights;
}

torch::Tensor ImitationLoss(PolicyPass& pass, const Decision& target, const std::vector<double>& weights) {
  const PolicySamples scored = pass.Score({target});
  if (weights.empty()) return -scored.log_prob.sum();
  if (!scored.choice_log_prob.defined()) throw Error("this policy does not score its choices one by one: its imitation cannot be weighted");
  const torch::Tensor w = torch::tensor(weights, torch::kFloat32);
  return -(scored.choice_log_prob[0] * w).sum();
}

}  // namespace devplace
