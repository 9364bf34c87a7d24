// The placement methods devplace compares, one function each. The registry
// in placer.cc lists them by name.
#pragma once

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

}  // namespace devplace
