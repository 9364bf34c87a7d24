// mcmc: not written yet.
#include "placers/methods.h"
#include "util/error.h"

namespace devplace {

PlacerOutput PlaceMcmc(const PlacementProblem& problem) { throw Error("mcmc: not built yet"); }

}  // namespace devplace
