// The placement methods devplace compares, one function each. The registry
// in placer.cc lists them by name.
#pragma once

#include <string>

#include "placers/placer.h"

namespace devplace {

// Everything on the CPU.
PlacerOutput PlaceSingleCpu(const PlacementProblem& problem);
// Everything on gpu:0, ops without a GPU kernel on the CPU (2017 §4.2).
PlacerOutput PlaceSingleGpu(const PlacementProblem& problem);
// The model's human-expert placement (Op::expert_stage).
PlacerOutput PlaceExpert(const PlacementProblem& problem);
// Each co-location group on a uniformly random device that can run it.
PlacerOutput PlaceRandom(const PlacementProblem& problem);

// Scotch static mapping of the op graph onto the cluster (2017 §4.2):
// compute cost as vertex weights, tensor bytes as edge weights, device
// speeds and link costs in the target architecture.
PlacerOutput PlaceScotch(const PlacementProblem& problem);
// The same without the CPU in the target (2017's "MinCut").
PlacerOutput PlaceMinCut(const PlacementProblem& problem);
// METIS k-way partitioning with part weights proportional to device speed
// (GDP's baseline).
PlacerOutput PlaceMetis(const PlacementProblem& problem);

// Baechi's memory-constrained list schedulers (SoCC 2020).
PlacerOutput PlaceMTopo(const PlacementProblem& problem);
PlacerOutput PlaceMEtf(const PlacementProblem& problem);
PlacerOutput PlaceMSct(const PlacementProblem& problem);

// m-ETF and m-SCT look at every ready op at every step, so their work is
// the sum over steps of the ready ops: quadratic where the ready list grows
// with the graph (on `synthetic --width 1024`, a fifth of the ops are ready
// at once: 5.6e8 looks at 100k ops, about an hour at a million). They refuse
// (throw Error) once they have looked at more than this many in all: above
// GNMT-8 unrolled to a million ops (2.0e8) and the default synthetic graph of
// a million ops (8.1e8); a few minutes' work on this project's machine.
inline constexpr int64_t kMaxListScheduleLooks = 2'000'000'000;
// The same with another bound, for tests.
PlacerOutput PlaceMEtf(const PlacementProblem& problem, int64_t max_looks);
PlacerOutput PlaceMSct(const PlacementProblem& problem, int64_t max_looks);

// The optimal contiguous split of the graph into device stages, by dynamic
// programming over its down-sets (Tarnawski et al., NeurIPS 2020;
// PipeDream's planner), each device's memory a constraint (dp_split.cc).
PlacerOutput PlaceDpSplit(const PlacementProblem& problem);
// The optimum by branch and bound over the simulator, on graphs of a few
// dozen units; spends problem.budget (exact_placer.cc).
PlacerOutput PlaceExact(const PlacementProblem& problem);
// FlexFlow's MCMC search over placements from the best one-shot baseline,
// each move evaluated incrementally; spends problem.budget (mcmc_placer.cc).
PlacerOutput PlaceMcmc(const PlacementProblem& problem);
// mcmc's chain from `start` (a learned method's best: the finishing search,
// methods/finishing_search.h) instead of the baselines' best; a start that
// does not fit is ranked with the baselines and the chain starts from the
// better (SearchCost). The start's run counts in the budget; the note names
// it `start_name`.
PlacerOutput PlaceMcmcFrom(const PlacementProblem& problem, const Placement& start, const std::string& start_name);

}  // namespace devplace
