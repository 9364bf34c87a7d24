// dp_split: not written yet.
#include "placers/methods.h"
#include "util/error.h"

namespace devplace {

PlacerOutput PlaceDpSplit(const PlacementProblem& problem) { throw Error("dp_split: not built yet"); }

}  // namespace devplace
