#include "rl/algorithm.h"

#include "rl/ppo.h"
#include "rl/reinforce.h"
#include "rl/rl_placer.h"
#include "util/error.h"

namespace devplace {

std::unique_ptr<Algorithm> MakeAlgorithm(const RlOptions& options) {
  if (options.algorithm == "reinforce") return MakeReinforceAlgorithm(options);
  if (options.algorithm == "ppo") return MakePpoAlgorithm(options);
  throw Error("--algorithm must be reinforce or ppo, got '" + ForMessage(options.algorithm) + "'");
}

}  // namespace devplace
