// exact: not written yet.
#include "placers/methods.h"
#include "util/error.h"

namespace devplace {

PlacerOutput PlaceExact(const PlacementProblem& problem) { throw Error("exact: not built yet"); }

}  // namespace devplace
