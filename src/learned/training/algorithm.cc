#include "learned/training/algorithm.h"

#include <cmath>
#include <limits>
#include <vector>

#include "placers/placer.h"
#include "learned/training/ppo.h"
#include "learned/training/reinforce.h"
#include "learned/learned_placer.h"
#include "sim/lower_bound.h"
#include "sim/placement.h"
#include "util/error.h"

namespace devplace {

std::vector<double> BaselineAdvantages(const std::vector<double>& rewards, bool batch_mean, double baseline_decay,
                                  double& baseline) {
  double reference = baseline;
  if (batch_mean && !rewards.empty()) {
    // Summed as offsets from the first reward, so that equal rewards give
    // a mean equal to each of them and advantages of exactly 0 (a plain sum
    // of three 0.7s divides back to 0.7 + 1e-16).
    double offsets = 0;
    for (double r : rewards) offsets += r - rewards[0];
    reference = rewards[0] + offsets / static_cast<double>(rewards.size());
  }
  std::vector<double> advantages;
  advantages.reserve(rewards.size());
  for (double r : rewards) advantages.push_back(reference - r);
  for (double r : rewards) baseline = baseline_decay * baseline + (1 - baseline_decay) * r;
  return advantages;
}

std::unique_ptr<Algorithm> MakeAlgorithm(const LearnedOptions& options) {
  if (options.algorithm == "reinforce") return MakeReinforceAlgorithm(options);
  if (options.algorithm == "ppo") return MakePpoAlgorithm(options);
  throw Error("--algorithm must be reinforce or ppo, got '" + ForMessage(options.algorithm) + "'");
}

std::vector<double> ProbeStepTimes(const std::vector<Outcome>& outcomes) {
  std::vector<double> times_s(outcomes.size(), std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].ok) {
      times_s[i] = outcomes[i].step_time_s;
    } else if (!outcomes[i].oom()) {
      times_s[i] = std::numeric_limits<double>::quiet_NaN();
    }
  }
  return times_s;
}

}  // namespace devplace
