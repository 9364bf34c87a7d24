#include "learned/training/step_profile.h"

#include <time.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace devplace {
namespace {

struct PhaseTotals {
  double wall_s = 0, thread_cpu_s = 0, process_cpu_s = 0;
  int64_t calls = 0;
};

struct Profile {
  std::mutex mutex;
  std::array<PhaseTotals, static_cast<size_t>(StepPhase::kCount)> phases;
  int64_t samples = 0;
};

Profile& TheProfile() {
  static Profile profile;
  return profile;
}

double ClockSeconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

const char* NameOf(StepPhase phase) {
  switch (phase) {
    case StepPhase::kEncode: return "encode";
    case StepPhase::kSample: return "sample";
    case StepPhase::kToPlacement: return "to placement";
    case StepPhase::kMeasure: return "measure";
    case StepPhase::kScore: return "score";
    case StepPhase::kBackward: return "backward";
    case StepPhase::kOptimizer: return "optimizer";
    case StepPhase::kStep: return "whole step";
    case StepPhase::kCount: break;
  }
  return "?";
}

}  // namespace

bool StepProfileOn() {
  static const bool on = std::getenv("DEVPLACE_PROFILE") != nullptr;
  return on;
}

ScopedStepPhase::ScopedStepPhase(StepPhase phase) : phase_(phase), on_(StepProfileOn()) {
  if (!on_) return;
  wall_s_ = ClockSeconds(CLOCK_MONOTONIC);
  thread_cpu_s_ = ClockSeconds(CLOCK_THREAD_CPUTIME_ID);
  process_cpu_s_ = ClockSeconds(CLOCK_PROCESS_CPUTIME_ID);
}

ScopedStepPhase::~ScopedStepPhase() {
  if (!on_) return;
  const double wall = ClockSeconds(CLOCK_MONOTONIC) - wall_s_;
  const double thread_cpu = ClockSeconds(CLOCK_THREAD_CPUTIME_ID) - thread_cpu_s_;
  const double process_cpu = ClockSeconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu_s_;
  Profile& profile = TheProfile();
  std::lock_guard<std::mutex> lock(profile.mutex);
  PhaseTotals& totals = profile.phases[static_cast<size_t>(phase_)];
  totals.wall_s += wall;
  totals.thread_cpu_s += thread_cpu;
  totals.process_cpu_s += process_cpu;
  ++totals.calls;
}

void CountProfiledSamples(int64_t samples) {
  if (!StepProfileOn()) return;
  Profile& profile = TheProfile();
  std::lock_guard<std::mutex> lock(profile.mutex);
  profile.samples += samples;
}

void PrintStepProfile() {
  if (!StepProfileOn()) return;
  Profile& profile = TheProfile();
  std::lock_guard<std::mutex> lock(profile.mutex);
  const PhaseTotals& step = profile.phases[static_cast<size_t>(StepPhase::kStep)];
  if (step.calls == 0) return;
  const double per_sample = profile.samples > 0 ? 1e3 / static_cast<double>(profile.samples) : 0;
  std::fprintf(stderr, "profile: %lld samples in %lld steps\n", static_cast<long long>(profile.samples),
               static_cast<long long>(step.calls));
  std::fprintf(stderr, "%-13s %8s %9s %10s %11s %12s %9s\n", "phase", "calls", "wall s", "thread s", "process s",
               "process ms/sample", "share");
  for (size_t p = 0; p < profile.phases.size(); ++p) {
    const PhaseTotals& t = profile.phases[p];
    if (t.calls == 0) continue;
    std::fprintf(stderr, "%-13s %8lld %9.3f %10.3f %11.3f %12.3f %8.1f%%\n", NameOf(static_cast<StepPhase>(p)),
                 static_cast<long long>(t.calls), t.wall_s, t.thread_cpu_s, t.process_cpu_s, t.process_cpu_s * per_sample,
                 step.process_cpu_s > 0 ? 100 * t.process_cpu_s / step.process_cpu_s : 0);
  }
  profile.phases = {};
  profile.samples = 0;
}

}  // namespace devplace
