#include "placers/metropolis_chain.h"

#include <algorithm>

#include "placers/chain_peers.h"
#include "util/error.h"
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

// Chains across processes (`with_peers`) share at fixed evaluation counts
// and must all reach them: their budget is evaluations only (the caller
// refuses a budget of seconds alone).
void SetDefaultBudget(SearchBudget& budget, bool with_peers) {
  if (budget.max_evaluations <= 0 && budget.max_seconds <= 0) {
    budget.max_evaluations = kDefaultEvaluations;
    budget.max_seconds = kDefaultSeconds;
  }
  if (with_peers) {
    if (budget.max_evaluations <= 0) budget.max_evaluations = kDefaultEvaluations;
    budget.max_seconds = 0;
  }
}

// The first multiple of `every` above `evaluations`.
int64_t NextShare(int64_t evaluations, int64_t every) { return (evaluations / every + 1) * every; }

}  // namespace

MovableUnits FindMovableUnits(const PlacementProblem& problem) {
  const Cluster& cluster = problem.cluster;
  MovableUnits movable;
  movable.grouping = ConstraintGroups(problem.graph);
  double unit_bytes = 0;
  for (int32_t g = 0; g < movable.grouping.num_groups(); ++g) {
    const Group& group = movable.grouping.groups[g];
    std::vector<int32_t> devices;
    for (int32_t d = 0; d < cluster.num_devices(); ++d) {
      if (group.device_kinds & MaskOf(cluster.devices[d].kind)) devices.push_back(d);
    }
    if (devices.size() < 2) continue;
    movable.units.push_back(g);
    movable.devices_of_unit.push_back(std::move(devices));
    unit_bytes += static_cast<double>(group.persistent_bytes + group.output_bytes);
  }
  const size_t units = movable.units.size();
  movable.overflow_scale_bytes =
      kOverflowScaleUnits * (units == 0 ? 1 : std::max(1.0, unit_bytes / static_cast<double>(units)));
  return movable;
}

MetropolisChain::MetropolisChain(const PlacementProblem& problem, const MovableUnits& movable,
                                 const std::string& method, std::vector<PlacerRun> more_starts)
    : problem_(problem),
      overflow_scale_bytes_(movable.overflow_scale_bytes),
      budget_(problem.budget),
      started_(std::chrono::steady_clock::now()) {
  SetDefaultBudget(budget_, problem.peers != nullptr);
  // The best of the one-shot baselines (not the searches; random included)
  // by SearchCost: the fastest that fits, else the one that overflows
  // least. A start out of memory where another fits is where chains once
  // spent 3,000 moves without ever fitting.
  std::vector<PlacerRun> runs = std::move(more_starts);
  for (PlacerRun& run : RunPlacers(problem, OneShotBaselineNames())) runs.push_back(std::move(run));
  evaluations_ += static_cast<int64_t>(runs.size());
  const PlacerRun* start = BestStart(runs, problem.cluster);
  if (!start && StopRequested()) throw Stopped();
  if (!start) throw Error(method + ": no baseline gave a placement to start from");
  start_method_ = start->method;
  start_fits_ = SearchCostOf(start->result, problem.cluster).fits();
  current_ = start->placement;
  // Stopped already (during the baselines), the chain makes no move: the
  // start's own run stands, without the second it takes to simulate a
  // million ops again. The simulator still picks the start under an
  // environment, as measuring every baseline would cost more than it tells.
  const bool stopped = StopRequested() && !problem.environment;
  current_result_ = stopped ? start->result : RunInFull(current_);
  evaluations_ += !stopped;
  current_cost_ = SearchCostOf(current_result_, problem.cluster);
  best_ = current_;
  best_result_ = current_result_;
  best_cost_ = current_cost_;
  restart_after_ = std::max<int64_t>(kMinRestartEvaluations, 2 * static_cast<int64_t>(movable.units.size()));
  if (problem.peers) next_share_ = NextShare(evaluations_, problem.peers->share_every());
}

MetropolisChain::MetropolisChain(const PlacementProblem& problem, const MovableUnits& movable, ChainState state)
    : problem_(problem),
      overflow_scale_bytes_(movable.overflow_scale_bytes),
      budget_(problem.budget),
      started_(std::chrono::steady_clock::now()),
      seconds_before_(state.seconds),
      start_method_(std::move(state.start_method)),
      start_fits_(state.start_fits),
      current_(std::move(state.current)),
      best_(std::move(state.best)),
      since_best_(state.since_best),
      evaluations_(state.evaluations),
      moves_(state.moves),
      restarts_(state.restarts),
      resumed_(state.resumed) {
  SetDefaultBudget(budget_, problem.peers != nullptr);
  // The best first, so that the run the simulator remembers for the next
  // move's incremental run is the current placement's.
  if (problem.environment) {
    best_result_ = RunInFull(best_);
  } else {
    best_result_ = problem.simulator.Run(best_);
  }
  best_cost_ = SearchCostOf(best_result_, problem.cluster);
  current_result_ = RunInFull(current_);
  current_cost_ = SearchCostOf(current_result_, problem.cluster);
  restart_after_ = std::max<int64_t>(kMinRestartEvaluations, 2 * static_cast<int64_t>(movable.units.size()));
  if (problem.peers) next_share_ = NextShare(evaluations_, problem.peers->share_every());
}

ChainState MetropolisChain::State() const {
  ChainState state;
  state.current = current_;
  state.best = best_;
  state.since_best = since_best_;
  state.evaluations = evaluations_;
  state.moves = moves_;
  state.restarts = restarts_;
  state.resumed = resumed_;
  state.seconds = seconds();
  state.start_method = start_method_;
  state.start_fits = start_fits_;
  return state;
}

double MetropolisChain::seconds() const {
  return seconds_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

bool MetropolisChain::OutOfBudget() const {
  if (StopRequested()) return true;
  if (budget_.max_evaluations > 0 && evaluations_ >= budget_.max_evaluations) return true;
  // The clock only now and then: reading it costs more than a small move.
  return budget_.max_seconds > 0 && evaluations_ % 16 == 0 && seconds() >= budget_.max_seconds;
}

SimResult MetropolisChain::RunInFull(const Placement& placement) {
  if (!problem_.environment) return problem_.simulator.Remember(placement);
  const Outcome outcome = problem_.environment->MeasureOne(placement);
  SimResult result;
  result.step_time_us = outcome.ok ? outcome.step_time_s * 1e6 : 0;
  // How far a real run overflowed is not known (the executor stops at the
  // first device out of memory), so every failure ranks last.
  result.failed = !outcome.ok;
  return result;
}

SimResult MetropolisChain::Evaluate(const Placement& placement, std::span<const int32_t> changed_ops) {
  if (problem_.environment) return RunInFull(placement);
  SimResult result = problem_.simulator.RunChanged(placement, changed_ops);
  resumed_ += problem_.simulator.last_skipped_fraction() > 0;
  return result;
}

SearchCost MetropolisChain::Offer(Placement next, std::span<const int32_t> changed_ops, Random& random) {
  StopTestPoint("chain-move");
  SimResult result = Evaluate(next, changed_ops);
  ++evaluations_;
  ++moves_;
  const SearchCost cost = SearchCostOf(result, problem_.cluster);
  // Once a placement fits, only placements that fit can be the best.
  const bool new_best = Better(cost, best_cost_);
  if (new_best) {
    best_ = next;
    best_cost_ = cost;
    best_result_ = result;
  }
  const double p_accept = AcceptanceProbability(current_cost_, cost, kAlpha * coldness_, overflow_scale_bytes_);
  if (p_accept >= 1 || random.Uniform() < p_accept) {
    if (!problem_.environment) problem_.simulator.KeepChanged();
    current_.swap(next);
    current_cost_ = cost;
    current_result_ = std::move(result);
  }
  if (new_best) {
    since_best_ = 0;
  } else if (++since_best_ >= restart_after_) {
    ReturnToBest();
    ++restarts_;
  }
  if (problem_.peers) ShareIfDue();
  return cost;
}

void MetropolisChain::ReturnToBest() {
  current_ = best_;
  current_result_ = RunInFull(current_);
  ++evaluations_;
  current_cost_ = best_cost_;
  since_best_ = 0;
}

double MetropolisChain::BudgetSpent() const {
  double spent = 0;
  if (budget_.max_evaluations > 0) spent = static_cast<double>(evaluations_) / static_cast<double>(budget_.max_evaluations);
  if (budget_.max_seconds > 0) spent = std::max(spent, seconds() / budget_.max_seconds);
  return std::min(spent, 1.0);
}

void MetropolisChain::ShareIfDue() {
  const int64_t every = problem_.peers->share_every();
  while (evaluations_ >= next_share_ && next_share_ < budget_.max_evaluations) {
    const std::vector<SharedBest> bests = problem_.peers->Exchange(next_share_ / every, {best_, best_cost_});
    next_share_ += every;
    const SharedBest& best = bests[BestOf(bests)];
    if (Better(best.cost, best_cost_)) Adopt(best.placement);
  }
}

// Another chain's best, better than this one's: the chain continues from
// it, as from a restart (one evaluation: its run is this chain's own).
// Measured on another host's devices (--reward measured), it may not be
// better on this one's: it becomes this chain's best only if it is here.
void MetropolisChain::Adopt(const Placement& placement) {
  current_ = placement;
  current_result_ = RunInFull(current_);
  ++evaluations_;
  current_cost_ = SearchCostOf(current_result_, problem_.cluster);
  if (Better(current_cost_, best_cost_)) {
    best_ = current_;
    best_result_ = current_result_;
    best_cost_ = current_cost_;
  }
  since_best_ = 0;
  ++adopted_;
}

bool ProposeExchange(const MovableUnits& movable, const Placement& current, Random& random, Placement& next,
                     std::vector<int32_t>& changed_ops) {
  if (movable.units.size() < 2 || random.Uniform() < 0.5) return false;
  constexpr int kTries = 8;
  for (int t = 0; t < kTries; ++t) {
    const size_t u = random.Below(movable.units.size());
    const size_t v = random.Below(movable.units.size());
    const std::vector<int32_t>& u_ops = movable.grouping.groups[movable.units[u]].ops;
    const std::vector<int32_t>& v_ops = movable.grouping.groups[movable.units[v]].ops;
    const int32_t du = current[u_ops.front()], dv = current[v_ops.front()];
    if (du == dv) continue;
    const std::vector<int32_t>& u_devices = movable.devices_of_unit[u];
    const std::vector<int32_t>& v_devices = movable.devices_of_unit[v];
    if (std::find(u_devices.begin(), u_devices.end(), dv) == u_devices.end() ||
        std::find(v_devices.begin(), v_devices.end(), du) == v_devices.end()) {
      continue;
    }
    next = current;
    changed_ops.clear();
    for (int32_t op : u_ops) {
      next[op] = dv;
      changed_ops.push_back(op);
    }
    for (int32_t op : v_ops) {
      next[op] = du;
      changed_ops.push_back(op);
    }
    return true;
  }
  return false;
}

std::unique_ptr<MetropolisChain> MakeChainFrom(const PlacementProblem& problem, const MovableUnits& movable,
                                               const std::string& method, const Placement& start,
                                               const std::string& start_name) {
  SimResult simulated = problem.simulator.Run(start);
  if (SearchCostOf(simulated, problem.cluster).fits()) {
    ChainState state;
    state.current = start;
    state.best = start;
    state.evaluations = 1;  // the start's run
    state.start_method = start_name;
    state.start_fits = true;
    return std::make_unique<MetropolisChain>(problem, movable, std::move(state));
  }
  std::vector<PlacerRun> starts;
  starts.push_back({start_name, start, std::move(simulated)});
  return std::make_unique<MetropolisChain>(problem, movable, method, std::move(starts));
}

void MetropolisChain::Report() const {
  if (!problem_.progress) return;
  SearchProgress p;
  p.evaluations = evaluations_;
  p.best_step_time_us = best_cost_.fits() ? best_cost_.step_time_us : 0;
  p.current_step_time_us = current_result_.ok() ? current_result_.step_time_us : 0;
  p.seconds = seconds();
  problem_.progress(p);
}

PlacerOutput MetropolisChain::Finish(const std::string& what_it_did) {
  size_t chains = 1;
  if (problem_.peers) {
    // Rank 0 ends with the best of every chain.
    const std::vector<SharedBest> bests = problem_.peers->Final({best_, best_cost_});
    chains = bests.size();
    const SharedBest& best = bests[BestOf(bests)];
    if (Better(best.cost, best_cost_)) {
      // Run here: under --reward measured another rank measured it on its
      // own devices, and rank 0 keeps it only if it is better on its own.
      SimResult result = RunInFull(best.placement);
      const SearchCost cost = SearchCostOf(result, problem_.cluster);
      if (Better(cost, best_cost_)) {
        best_ = best.placement;
        best_result_ = std::move(result);
        best_cost_ = cost;
      }
    }
  }
  PlacerOutput output;
  output.placement = std::move(best_);
  // Simulated runs only: a measured outcome is no simulation of it.
  if (!problem_.environment) output.result = std::move(best_result_);
  if (problem_.environment && best_cost_.fits()) output.measured_step_time_s = best_cost_.step_time_us * 1e-6;
  output.evaluations = evaluations_;
  output.seconds = seconds();
  if (best_cost_.fits()) output.best_step_time_s = best_cost_.step_time_us * 1e-6;
  output.note = "started from " + start_method_ +
                (start_fits_ ? "" : " (out of memory: no one-shot baseline fits)") + "; " + what_it_did;
  if (!best_cost_.fits()) output.note += "; no placement it met fits in memory";
  if (problem_.peers) {
    output.note += "; the best of " + std::to_string(chains) + " chains across processes, sharing their best every " +
                   std::to_string(problem_.peers->share_every()) + " evaluations (this chain took another's " +
                   std::to_string(adopted_) + " times)";
  }
  return output;
}

}  // namespace devplace
