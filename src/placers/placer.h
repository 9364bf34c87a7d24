// Placers: anything that turns a graph and a cluster into a placement. This
// header holds what they share: the problem they solve, what they return, and
// the registry that finds them by name (`devplace compare --methods`).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "graph/graph.h"
#include "graph/grouping.h"
#include "sim/environment.h"
#include "sim/placement.h"
#include "sim/simulator.h"

namespace devplace {

class ChainPeers;  // placers/chain_peers.h

// How much a search placer (mcmc, exact) may spend; the one-shot placers
// ignore it. Zero means no limit of that kind; a search given neither uses
// its own default. Comparisons give evaluations: a wall-clock budget makes
// the result depend on the machine's load.
struct SearchBudget {
  int64_t max_evaluations = 0;  // simulator runs, full or incremental
  double max_seconds = 0;
};

// Where a search stands, for a progress line.
struct SearchProgress {
  int64_t evaluations = 0;
  double best_step_time_us = 0;     // 0 while nothing measured ran
  double current_step_time_us = 0;  // the search's current point; 0 if none
  double seconds = 0;
};

struct PlacementProblem {
  const Graph& graph;
  const Cluster& cluster;
  const CostModel& cost;
  Simulator& simulator;  // for placers that check their result (memory repair)
  uint64_t seed = 0;
  SearchBudget budget = {};
  // Called now and then by search placers; may be empty.
  std::function<void(const SearchProgress&)> progress = {};
  // When set, a search (mcmc) judges its candidates by this environment,
  // each in full, rather than by the simulator: `--reward measured` runs
  // them on the real machine. One-shot placers ignore it.
  Environment* environment = nullptr;
  // When set, a local search's chain is one of several across processes
  // and shares its best with them (placers/chain_peers.h). Its budget is
  // then evaluations only, so that the shares fall at the same counts.
  ChainPeers* peers = nullptr;
};

struct PlacerOutput {
  Placement placement;
  // What the placer could not honour, in words ("no placement fits in
  // memory: ..."); empty when all is well.
  std::string note;
  int64_t evaluations = 0;  // simulator runs a search spent (0 for one-shot placers)
  // The search's own seconds, a resumed run's earlier ones included (so
  // that evaluations / seconds is its rate); 0: the caller's clock says.
  double seconds = 0;
  // A search's best step time as it judged it (its environment's
  // measurement, or the simulator's); 0 when it has none that fits.
  double best_step_time_s = 0;
  // The simulator's full result for `placement`, when the placer already
  // has it (mcmc keeps its best's): the caller need not run it again, which
  // takes a second at a million ops, as long as a stopped run may take.
  std::optional<SimResult> result;
  // A search under an environment (--reward measured): its best's step
  // time as the environment measured it; 0 when none fits or none was.
  double measured_step_time_s = 0;
};

struct PlacerInfo {
  std::string name;
  std::string description;
  std::function<PlacerOutput(const PlacementProblem&)> place;
  bool search = false;  // spends a SearchBudget (mcmc, exact)
};

// Every placer devplace knows, in the order `compare` runs them. Each one's
// `place` first calls CheckClusterCanRun, so no placer meets an op that no
// device of its cluster can run.
const std::vector<PlacerInfo>& ListPlacers();
// The placer called `name`; throws Error listing the known ones.
const PlacerInfo& FindPlacer(const std::string& name);

// Throws Error naming the first op that no device of
// `cluster` can run, the device kinds it may use, and the cluster: no
// placement of such a graph is valid, so there is nothing to search for.
void CheckClusterCanRun(const Graph& graph, const Cluster& cluster);

// CheckClusterCanRun, then the same for each group of `grouping` (the kinds
// its ops share): a placer that moves whole groups cannot place one that no
// device can run.
void CheckGroupsCanRun(const Graph& graph, const Cluster& cluster, const Grouping& grouping);

// The grouping options for placing on `cluster`: the single-consumer merge
// bounded, per device kind, by half the usable memory of the smallest device
// of that kind (a merged group must then fit every kind it can run on).
// Half, not all: a group's size counts its parameters and outputs only, and
// its device also holds the tensors it receives from other groups and the
// groups placed beside it; and a placer needs room to move groups between
// devices to balance them.
GroupingOptions GroupingOptionsFor(const Cluster& cluster);

// Units of placement for the partitioners: the co-location groups alone,
// without the single-consumer merge, so partitioners see the graph's real
// structure but cannot split what must stay together.
Grouping ConstraintGroups(const Graph& graph);

// One placer's placement and its simulated step.
struct PlacerRun {
  std::string method;
  Placement placement;
  SimResult result;
};

// Runs each placer called `names` on `problem` and simulates its placement
// with problem.simulator, in that order; a placer that refuses the problem
// (throws Error: the expert on a graph without expert stages) is left out.
// After a stop (util/stop_request.h) no more run once one has a placement:
// the runs made so far return.
// What the searches start from.
std::vector<PlacerRun> RunPlacers(const PlacementProblem& problem, const std::vector<std::string>& names);

// The one-shot baselines, in ListPlacers' order: every placer but the
// searches, `random` (seeded) included. What mcmc starts from and what
// exact falls back to on a graph too large for it. Random groups beat
// every partitioner 2.5x on a wide graph (a million-op synthetic graph
// whose partitioners cut into runs of layers; BENCHMARKS.md), and a search
// that left them out started from the partitioners' 3.97 s, not 1.58 s.
std::vector<std::string> OneShotBaselineNames();

// Devices of a kind, in cluster order.
std::vector<int32_t> DevicesOfKind(const Cluster& cluster, DeviceKind kind);

// Time of `op` on the fastest device that can run it, in microseconds.
double FastestOpTimeUs(const PlacementProblem& problem, int32_t op);

}  // namespace devplace
