#include "sim/measure.h"

namespace devplace {

Measurement MeasureStepTime(Simulator& simulator, const Placement& placement, const MeasureOptions& options) {
  Measurement m;
  const int32_t steps = options.steps < 1 ? 1 : options.steps;
  double total_us = 0;
  for (int32_t step = 0; step < steps; ++step) {
    SimOptions sim;
    sim.noise = options.noise;
    // Each step draws its own noise; the golden-ratio stride keeps the
    // steps' streams apart.
    sim.seed = options.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(step + 1);
    sim.stop_at_oom = options.stop_at_oom;
    SimResult r = simulator.Run(placement, sim);
    if (!r.ok()) {
      m.ok = false;
      m.last = std::move(r);
      return m;
    }
    if (step == 0) r.step_time_us *= options.first_step_factor;
    // With a single step there is nothing to drop.
    if (step > 0 || steps == 1) {
      total_us += r.step_time_us;
      ++m.steps_averaged;
    }
    m.last = std::move(r);
  }
  m.mean_step_time_us = total_us / m.steps_averaged;
  return m;
}

}  // namespace devplace
