// The 2017 paper's measuring protocol (§3.4): run a placement for several
// steps, drop the first (it pays one-time costs), average the rest.
#pragma once

#include <cstdint>

#include "sim/simulator.h"

namespace devplace {

struct MeasureOptions {
  int32_t steps = 10;            // the paper runs each placement 10 steps
  NoiseOptions noise;
  uint64_t seed = 0;
  double first_step_factor = 1.0;  // how much slower the dropped first step runs
  // An out-of-memory step ends where memory first overflows (it will fail
  // anyway); false runs it to its end, so that its peaks say by how much.
  bool stop_at_oom = true;
};

struct Measurement {
  double mean_step_time_us = 0;  // over steps 2..N
  int32_t steps_averaged = 0;
  bool ok = true;                // false if any step was invalid, out of memory or failed
  SimResult last;                // the last step's full result
};

Measurement MeasureStepTime(Simulator& simulator, const Placement& placement, const MeasureOptions& options);

}  // namespace devplace
