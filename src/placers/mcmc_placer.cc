// mcmc: FlexFlow's search over placements (Jia et al., SysML 2019, §5) on
// devplace's simulator. From the best one-shot baseline, each step moves one
// unit (a co-location group, or an op with none) to another device that can
// run it, and keeps the move if the step gets faster, or if it gets slower
// with probability exp(-alpha x relative slowdown) (Metropolis). The best
// placement that ran is kept; a search that has not improved on it for a
// while restarts from it. Every move is evaluated incrementally
// (Simulator::RunChanged): only what the move can change is re-simulated.
//
// Placements that run out of memory are not solutions, but the chain may
// pass through them: it starts from the fastest baseline that fits (else
// the one that overflows least) and ranks placements lexicographically
// (placers/search_cost.h): any that fits beats any out of memory, and among
// those out of memory less overflow is better, so a chain that starts out
// of memory walks toward fitting, and one that fits never leaves it.
//
// Given an environment (PlacementProblem::environment; `place --reward
// measured`: real runs), every candidate is measured in full by it instead,
// and any failure ranks below every placement that ran.
#include <chrono>
#include <cmath>
#include <limits>

#include "placers/methods.h"
#include "placers/search_cost.h"
#include "util/error.h"
#include "util/random.h"
#include "util/stop_request.h"

namespace devplace {

namespace {

// Relative slowdown to acceptance (AcceptanceProbability): a move 1 %
// slower is taken with probability exp(-1) = 0.37, one 5 % slower with
// 0.7 %.
constexpr double kAlpha = 100;
// Out of memory, the overflow a move may add to be taken with probability
// 1/e (AcceptanceProbability), in mean bytes of a unit: a move that adds a
// whole unit's worth is taken with probability exp(-4) = 0.018. Hot enough
// to leave a packing one swap from fitting, cold enough to drift toward
// fitting (a whole unit is nearly a random walk; docs/placers.md).
constexpr double kOverflowScaleUnits = 0.25;
// Evaluations without a new best before the chain restarts from the best;
// at least this many, or twice the units (a sweep's worth of moves).
constexpr int64_t kMinRestartEvaluations = 200;
// Without a budget: this many evaluations, or this many seconds where
// evaluations are slow (a graph of a million ops), whichever comes first,
// so that `compare` on a huge graph still ends.
constexpr int64_t kDefaultEvaluations = 2000;
constexpr double kDefaultSeconds = 60;

struct Start {
  std::string method;
  Placement placement;
  SearchCost cost;
  SimResult result;  // its full run, from RunPlacers
};

// The best of the one-shot baselines (not the searches; random included)
// by SearchCost: the fastest that fits, else the one that overflows least.
// A start out of memory where another fits is where issue 47's chains
// spent 3,000 moves without ever fitting.
Start BestOneShot(const PlacementProblem& problem, int64_t& evaluations) {
  std::vector<PlacerRun> runs = RunPlacers(problem, OneShotBaselineNames());
  evaluations += static_cast<int64_t>(runs.size());
  const PlacerRun* best = BestStart(runs, problem.cluster);
  if (!best && StopRequested()) throw Stopped();
  if (!best) throw Error("mcmc: no baseline gave a placement to start from");
  return {best->method, best->placement, SearchCostOf(best->result, problem.cluster), best->result};
}

}  // namespace

PlacerOutput PlaceMcmc(const PlacementProblem& problem) {
  const Graph& graph = problem.graph;
  const Cluster& cluster = problem.cluster;
  Simulator& sim = problem.simulator;
  const auto started = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  SearchBudget budget = problem.budget;
  if (budget.max_evaluations <= 0 && budget.max_seconds <= 0) {
    budget.max_evaluations = kDefaultEvaluations;
    budget.max_seconds = kDefaultSeconds;
  }

  // The units that can move, each with the devices that can run all of it.
  const Grouping grouping = ConstraintGroups(graph);
  std::vector<const Group*> units;
  std::vector<std::vector<int32_t>> devices_of_unit;
  for (const Group& group : grouping.groups) {
    std::vector<int32_t> devices;
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (group.device_kinds & MaskOf(cluster.devices[d].kind)) devices.push_back(d);
    }
    if (devices.size() < 2) continue;
    units.push_back(&group);
    devices_of_unit.push_back(std::move(devices));
  }

  double unit_bytes = 0;
  for (const Group* unit : units) unit_bytes += static_cast<double>(unit->persistent_bytes + unit->output_bytes);
  const double overflow_scale_bytes =
      kOverflowScaleUnits * (units.empty() ? 1 : std::max(1.0, unit_bytes / static_cast<double>(units.size())));

  int64_t evaluations = 0;
  const Start start = BestOneShot(problem, evaluations);
  Placement current = start.placement;
  // With an environment (real runs), each candidate is measured in full
  // and its outcome stands in for the simulator's result; the simulator
  // still picks the start, as measuring every baseline would cost more
  // than it tells.
  auto measure = [&](const Placement& placement) {
    const Outcome outcome = problem.environment->MeasureOne(placement);
    SimResult result;
    result.step_time_us = outcome.ok ? outcome.step_time_s * 1e6 : 0;
    // How far a real run overflowed is not known (the executor stops at
    // the first device out of memory), so every failure ranks last.
    result.failed = !outcome.ok;
    return result;
  };
  // Stopped already (during the baselines), the chain makes no move: the
  // start's own run stands, without the second it takes to simulate a
  // million ops again.
  const bool stopped = StopRequested() && !problem.environment;
  SimResult current_result = stopped ? start.result : problem.environment ? measure(current) : sim.Remember(current);
  evaluations += !stopped;
  SearchCost current_cost = SearchCostOf(current_result, cluster);
  Placement best = current;
  SimResult best_result = current_result;
  SearchCost best_cost = current_cost;
  const int64_t restart_after = std::max<int64_t>(kMinRestartEvaluations, 2 * static_cast<int64_t>(units.size()));
  int64_t since_best = 0;
  int64_t resumed = 0, moves = 0, restarts = 0;
  Random random(problem.seed ^ 0x6d636d63ull);  // "mcmc"

  auto report = [&] {
    if (!problem.progress) return;
    SearchProgress p;
    p.evaluations = evaluations;
    p.best_step_time_us = best_cost.fits() ? best_cost.step_time_us : 0;
    p.current_step_time_us = current_result.ok() ? current_result.step_time_us : 0;
    p.seconds = seconds();
    problem.progress(p);
  };
  auto out_of_budget = [&] {
    if (StopRequested()) return true;
    if (budget.max_evaluations > 0 && evaluations >= budget.max_evaluations) return true;
    // The clock only now and then: reading it costs more than a small move.
    return budget.max_seconds > 0 && evaluations % 16 == 0 && seconds() >= budget.max_seconds;
  };

  std::vector<int32_t> changed;
  while (!units.empty() && !out_of_budget()) {
    const size_t u = random.Below(units.size());
    const std::vector<int32_t>& devices = devices_of_unit[u];
    const int32_t from = current[units[u]->ops.front()];
    int32_t to = devices[random.Below(devices.size() - 1)];
    if (to == from) to = devices.back();  // uniform over the other devices
    Placement next = current;
    for (int32_t op : units[u]->ops) next[op] = to;
    const SimResult result = problem.environment ? measure(next) : sim.RunChanged(next, units[u]->ops);
    ++evaluations;
    ++moves;
    resumed += !problem.environment && sim.last_skipped_fraction() > 0;
    const SearchCost cost = SearchCostOf(result, cluster);
    // Once a placement fits, only placements that fit can be the best.
    const bool new_best = Better(cost, best_cost);
    if (new_best) {
      best = next;
      best_cost = cost;
      best_result = result;
    }
    const double p_accept = AcceptanceProbability(current_cost, cost, kAlpha, overflow_scale_bytes);
    const bool accept = p_accept >= 1 || random.Uniform() < p_accept;
    if (accept) {
      if (!problem.environment) sim.KeepChanged();
      current.swap(next);
      current_cost = cost;
      current_result = result;
    }
    if (new_best) {
      since_best = 0;
    } else if (++since_best >= restart_after) {
      current = best;
      current_result = problem.environment ? measure(current) : sim.Remember(current);
      ++evaluations;
      current_cost = best_cost;
      since_best = 0;
      ++restarts;
    }
    if (evaluations % 100 == 0) report();
  }
  report();

  PlacerOutput output;
  output.placement = std::move(best);
  // Simulated runs only: a measured outcome is no simulation of it.
  if (!problem.environment) output.result = std::move(best_result);
  output.evaluations = evaluations;
  char note[256];
  std::snprintf(note, sizeof note, "started from %s%s; %lld moves, %lld restarts, %.0f%% of moves resumed from a snapshot",
                start.method.c_str(), start.cost.fits() ? "" : " (out of memory: no one-shot baseline fits)",
                static_cast<long long>(moves), static_cast<long long>(restarts),
                moves > 0 ? 100.0 * resumed / moves : 0.0);
  output.note = note;
  if (!best_cost.fits()) output.note += "; no placement it met fits in memory";
  return output;
}

}  // namespace devplace
