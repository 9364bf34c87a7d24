// Where a learned placer's time goes: with DEVPLACE_PROFILE set in the
// environment, the training loop times each phase of its steps (encoding,
// sampling, turning decisions into placements, measuring, scoring,
// backpropagating, the optimiser step) and prints one table to stderr at the
// end of the run. Each phase gets its wall seconds, the CPU seconds of the
// thread that ran it and the CPU seconds of the whole process meanwhile (the
// simulator's worker threads are in the last). CPU seconds hardly depend on
// what else the machine runs, so on a loaded machine compare those. Off, a
// phase costs one branch.
#pragma once

#include <cstdint>

namespace devplace {

enum class StepPhase : int32_t {
  kEncode,       // Policy::Begin: the network's forward pass over the graph
  kSample,       // PolicyPass::Sample
  kToPlacement,  // decisions into op-by-op placements
  kMeasure,      // Environment::Measure (the simulator's batch)
  kScore,        // PolicyPass::Score: the differentiable log-probabilities
  kBackward,     // loss.backward()
  kOptimizer,    // gradient clipping, the optimiser step, copies to controllers
  kStep,         // a whole step: the others plus the loop's own bookkeeping
  kCount,
};

// Whether DEVPLACE_PROFILE is set (read once).
bool StepProfileOn();

// Times one phase from construction to destruction when profiling is on.
class ScopedStepPhase {
 public:
  explicit ScopedStepPhase(StepPhase phase);
  ~ScopedStepPhase();
  ScopedStepPhase(const ScopedStepPhase&) = delete;
  ScopedStepPhase& operator=(const ScopedStepPhase&) = delete;

 private:
  StepPhase phase_;
  bool on_;
  double wall_s_ = 0, thread_cpu_s_ = 0, process_cpu_s_ = 0;
};

// Counts measured samples (for the per-sample columns).
void CountProfiledSamples(int64_t samples);

// Prints the table (when profiling is on and anything was timed) and clears it.
void PrintStepProfile();

}  // namespace devplace
