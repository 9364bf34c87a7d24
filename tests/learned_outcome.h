// Asserting what a learned placer achieves, on any CPU.
//
// A training run's exact numbers hold only for one machine's floating-point
// kernels: ATen picks its vectorised kernels by CPU (ATEN_CPU_CAPABILITY:
// default, avx2, avx512) and OpenBLAS its matrix kernels by core
// (OPENBLAS_CORETYPE), and a difference in the last bit of one logit can
// change one sampled placement and with it the rest of the run. So a test of
// a learned outcome asserts what the method must achieve for most of several
// seeds (SeedsReaching), or with a margin no kernel difference crosses; exact
// equality (same seed, same run; resumed equals uninterrupted) is asserted
// only between runs in one process. docs/rl.md, "What is reproducible".
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace devplace::testing {

struct SeedOutcomes {
  int tried = 0;
  int reached = 0;
  std::string missed;  // "seed S: what it got" for each seed that did not reach
};

// Runs `run(seed)` for seeds 1, 2, ... `tries`, where `run` returns "" when
// the seed's run reached the outcome and what it got instead when not. Stops
// as soon as `needed` seeds reached it, or too few seeds are left to, so the
// usual cost is `needed` runs.
inline SeedOutcomes SeedsReaching(int needed, int tries, const std::function<std::string(uint64_t seed)>& run) {
  SeedOutcomes out;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(tries); ++seed) {
    if (out.reached >= needed || out.reached + (tries - out.tried) < needed) break;
    ++out.tried;
    const std::string missed = run(seed);
    if (missed.empty()) {
      ++out.reached;
    } else {
      out.missed += "seed " + std::to_string(seed) + ": " + missed + "; ";
    }
  }
  return out;
}

}  // namespace devplace::testing
