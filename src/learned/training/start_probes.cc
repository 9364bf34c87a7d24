#include "learned/training/start_probes.h"

#include "learned/training/algorithm.h"

namespace devplace {

MeasuredProbes MeasureStartProbes(Policy& policy, Environment& environment) {
  MeasuredProbes measured;
  const std::vector<Decision> probes = policy.StartProbes();
  if (probes.empty()) return measured;
  measured.placements.reserve(probes.size());
  for (const Decision& d : probes) measured.placements.push_back(policy.ToPlacement(d));
  measured.outcomes = environment.Measure(measured.placements, -1, 0);
  policy.ChooseStart(ProbeStepTimes(measured.outcomes));
  return measured;
}

}  // namespace devplace
