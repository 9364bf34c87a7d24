// mcmc: FlexFlow's search over placements (Jia et al., SysML 2019, §5) on
// devplace's simulator. From the best one-shot baseline, each step moves one
// unit (a co-location group, or an op with none) to another device that can
// run it, drawn uniformly, and keeps the move if the step gets faster, or if
// it gets slower with probability exp(-alpha x relative slowdown)
// (Metropolis). The chain (start, ranking, acceptance, restarts, real runs
// under an environment) is placers/metropolis_chain.h; every move is
// evaluated incrementally (Simulator::RunChanged): only what the move can
// change is re-simulated.
#include <cstdio>

#include "placers/methods.h"
#include "placers/metropolis_chain.h"
#include "util/random.h"

namespace devplace {

namespace {

// mcmc's moves on `chain` until its budget is spent.
PlacerOutput RunMcmcMoves(const PlacementProblem& problem, const MovableUnits& movable, MetropolisChain& chain) {
  Random random(problem.seed ^ 0x6d636d63ull);  // "mcmc"
  Placement exchanged;
  std::vector<int32_t> exchanged_ops;
  while (!movable.units.empty() && !chain.OutOfBudget()) {
    if (!chain.current_cost().fits() && ProposeExchange(movable, chain.current(), random, exchanged, exchanged_ops)) {
      chain.Offer(std::move(exchanged), exchanged_ops, random);
      if (chain.evaluations() % 100 == 0) chain.Report();
      continue;
    }
    const size_t u = random.Below(movable.units.size());
    const std::vector<int32_t>& devices = movable.devices_of_unit[u];
    const std::vector<int32_t>& ops = movable.grouping.groups[movable.units[u]].ops;
    const int32_t from = chain.current()[ops.front()];
    int32_t to = devices[random.Below(devices.size() - 1)];
    if (to == from) to = devices.back();  // uniform over the other devices
    Placement next = chain.current();
    for (int32_t op : ops) next[op] = to;
    chain.Offer(std::move(next), ops, random);
    if (chain.evaluations() % 100 == 0) chain.Report();
  }
  chain.Report();
  char what[160];
  std::snprintf(what, sizeof what, "%lld moves, %lld restarts, %.0f%% of moves resumed from a snapshot",
                static_cast<long long>(chain.moves()), static_cast<long long>(chain.restarts()),
                chain.moves() > 0 ? 100.0 * chain.resumed() / chain.moves() : 0.0);
  return chain.Finish(what);
}

}  // namespace

PlacerOutput PlaceMcmc(const PlacementProblem& problem) {
  const MovableUnits movable = FindMovableUnits(problem);
  MetropolisChain chain(problem, movable, "mcmc");
  return RunMcmcMoves(problem, movable, chain);
}

PlacerOutput PlaceMcmcFrom(const PlacementProblem& problem, const Placement& start, const std::string& start_name) {
  const MovableUnits movable = FindMovableUnits(problem);
  std::unique_ptr<MetropolisChain> chain = MakeChainFrom(problem, movable, "mcmc", start, start_name);
  return RunMcmcMoves(problem, movable, *chain);
}

}  // namespace devplace
